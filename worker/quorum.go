package worker

// This file holds the cluster link's probe: whether the server the worker
// uses still has the quorum of its cluster, asked the way any NATS client
// can (JetStream API requests, no system account).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// replicaSilence is how long a stream leader may go without hearing from a
// replica before the worker stops counting that replica towards a quorum:
// three raft heartbeats (nats-server sends one a second to an idle
// follower, and an append is answered at once). The server itself waits
// for 10 s of silence (its lostQuorumInterval), checked every 10 s, before
// a leader without a quorum steps down, and answers as leader until then.
const replicaSilence = 3 * time.Second

// quorumError says that the stream's leader answers but cannot reach a
// majority of its replicas: the server the worker uses is cut off from its
// cluster, though it still answers.
type quorumError struct {
	stream, leader  string
	heard, replicas int
}

func (e *quorumError) Error() string {
	if e.leader == "" {
		return fmt.Sprintf("stream %s has no leader", e.stream)
	}
	return fmt.Sprintf("stream %s's leader on server %s hears from %d of %d replicas", e.stream, e.leader, e.heard, e.replicas)
}

// probeCluster asks JetStream whether the worker can work: the meta leader
// answers account info, and the requests stream's leader hears from a
// majority of its group. Account info alone is not enough: the meta
// leader answers it, and a meta leader cut off from the other servers goes
// on answering until it steps down, 10 to 20 s later, while the worker's
// appends and pulls get no answer. A server cut off that does not lead the
// stream does not answer its info at all (the probe times out), or answers
// without a leader once its group noticed.
func probeCluster(js jetstream.JetStream, stream string) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := js.AccountInfo(ctx); err != nil {
			return fmt.Errorf("account info: %w", err)
		}
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return fmt.Errorf("stream info %s: %w", stream, err)
		}
		return checkQuorum(s.CachedInfo())
	}
}

// checkQuorum reports a quorumError unless the stream's leader, together
// with the replicas it heard from within replicaSilence, makes a majority
// of the stream's group. A stream of one
// replica (a single server) needs nobody else.
func checkQuorum(info *jetstream.StreamInfo) error {
	if info == nil || info.Config.Replicas <= 1 || info.Cluster == nil {
		return nil
	}
	cl := info.Cluster
	e := &quorumError{stream: info.Config.Name, leader: cl.Leader, replicas: max(info.Config.Replicas, len(cl.Replicas)+1) - 1}
	if cl.Leader == "" {
		return e
	}
	for _, r := range cl.Replicas {
		// Heard from recently counts, current or not: a replica that
		// answers but lags behind a burst of writes is not a loss. A
		// peer never heard from shows Active 0 and is not current.
		if (r.Active > 0 || r.Current) && r.Active < replicaSilence {
			e.heard++
		}
	}
	if 2*(e.heard+1) > e.replicas+1 {
		return nil
	}
	return e
}

// lossSign is what the cluster link logs as the sign of a loss found by
// probeCluster.
func lossSign(err error) string {
	var q *quorumError
	if errors.As(err, &q) {
		return "JetStream answers without a quorum of its cluster"
	}
	return "JetStream does not answer"
}
