package worker

// This file holds the partition consumers: one durable pull consumer per
// partition of the requests stream, pulled at a priority that gives every
// partition a preferred worker.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/eventlog"
)

// ConsumerName is the durable consumer of partition p, shared by all
// workers of an installation.
func ConsumerName(names eventlog.Names, p int) string {
	return fmt.Sprintf("%s_worker_p%d", strings.ToLower(names.RequestsStream), p)
}

// consume runs partition p's consumption until ctx ends, starting it again
// whenever it stops on its own. Requests run under work.
func (w *Worker) consume(ctx, work context.Context, p int) {
	js := w.cfg.Log.JetStream()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		cc, err := w.startConsumer(ctx, js, work, p)
		if err != nil {
			if eventlog.Unavailable(err) {
				w.link.suspect()
			}
			level := slog.LevelWarn
			if w.link.isDown() {
				level = slog.LevelDebug // the loss is logged once
			}
			w.log.Log(ctx, level, "partition not consumed yet; retrying", "partition", p, "err", err, "in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		select {
		case <-ctx.Done():
			cc.Stop()
			<-cc.Closed()
			return
		case <-cc.Closed():
			w.log.Debug("partition consumption ended; starting it again", "partition", p)
		}
	}
}

func (w *Worker) startConsumer(ctx context.Context, js jetstream.JetStream, work context.Context, p int) (jetstream.ConsumeContext, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:       ConsumerName(w.names, p),
		Description:   "turnlog workers: chat requests of one partition, one at a time",
		FilterSubject: w.names.ChatPartition(p),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       w.cfg.AckWait,
		MaxDeliver:    w.cfg.MaxDeliver + LostDeliveries,
		MaxAckPending: 1,
		// The consumer's state stays on disk (the default). In memory it
		// would save a state-file write per ack, but a restarted server
		// forgets memory consumers altogether.
		//
		// Prioritized pulls give each partition a preferred worker (see
		// priority), so a conversation's requests keep landing where its
		// Turn is cached, while any other worker takes over at once when
		// the preferred one stops pulling.
		PriorityPolicy: jetstream.PriorityPolicyPrioritized,
		PriorityGroups: []string{priorityGroup},
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, w.names.RequestsStream, cfg)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 400 && apiErr.ErrorCode != jetstream.JSErrCodeConsumerCreate {
		// A server older than 2.12 knows no prioritized pulls: work
		// without a preferred worker rather than not at all.
		plain := cfg
		plain.PriorityPolicy, plain.PriorityGroups = jetstream.PriorityPolicyNone, nil
		if c, perr := js.CreateOrUpdateConsumer(ctx, w.names.RequestsStream, plain); perr == nil {
			w.log.Warn("consumer without prioritized pulls (nats-server 2.12 or newer has them); conversations may move between workers", "partition", p, "err", err)
			cons, err = c, nil
		}
	}
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeConsumerCreate {
		// An existing consumer whose settings cannot be changed in place
		// (made by an older turnlog): use it as it is rather than refuse
		// to start.
		if existing, cerr := js.Consumer(ctx, w.names.RequestsStream, ConsumerName(w.names, p)); cerr == nil {
			w.log.Warn("using the existing consumer as it is", "partition", p, "err", err)
			cons, err = existing, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer for partition %d: %w", p, err)
	}
	opts := []jetstream.PullConsumeOpt{
		// MaxAckPending 1 means one request at a time whatever the batch;
		// a batch of more than one keeps a pull of this worker waiting at
		// the server while it handles a request, so the next request of
		// the partition can go to the preferred worker as soon as this one
		// is acked. A larger batch only means fewer pull requests: nats.go
		// pulls again when half of it is delivered (with 4, a pull for
		// every second request, seen in the profile of bench --workers).
		jetstream.PullMaxMessages(pullBatch),
		// A pull waiting at a consumer leader that dies, or sent while
		// the consumer has no leader, is lost; the client notices by
		// missed heartbeats (one every half expiry, two missed) and pulls
		// again. See pullExpiry.
		jetstream.PullExpiry(pullExpiry),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if ctx.Err() != nil {
				return
			}
			// Missed heartbeats are common on a healthy cluster (a pull
			// waits behind a prioritized one); nats.go pulls again by
			// itself. A lost cluster is told by the link's probe.
			w.log.Debug("consume", "partition", p, "err", err)
		}),
	}
	if info := cons.CachedInfo(); info != nil && info.Config.PriorityPolicy == jetstream.PriorityPolicyPrioritized {
		opts = append(opts, jetstream.PullPriorityGroup(priorityGroup), jetstream.PullPrioritized(w.priority(p)))
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { w.handle(work, m) }, opts...)
	if err != nil {
		return nil, fmt.Errorf("consume partition %d: %w", p, err)
	}
	return cc, nil
}

// pullExpiry is how long one pull of a partition waits at the server,
// and so the longest a pull lost in an election leaves the partition
// unserved once the consumer has a leader again. The 30 s default would
// stall a partition for 30 s after every failover; 5 s stalled the
// partitions for up to 5 s after the log answered again (the fault
// matrix's minority scenario: partitions resumed one by one over 4.3 s),
// where 2 s costs one pull per partition and worker every 2 s when idle.
const pullExpiry = 2 * time.Second

// pullBatch is how many requests one pull of a partition asks for.
const pullBatch = 32

// priorityGroup is the priority group of the partition consumers.
const priorityGroup = "workers"

// priority is this worker's pull priority on partition p (0 is served
// first, 9 last). Each worker ranks partitions by a hash of its name, so
// every partition has a preferred worker without any coordination
// (rendezvous hashing over JetStream's ten levels): its requests go to the
// worker that has the conversations' Turns cached, and when that worker
// stops pulling, the next one in rank takes the partition.
func (w *Worker) priority(p int) uint8 {
	h := fnv.New32a()
	h.Write([]byte(w.cfg.Name))
	h.Write([]byte{byte(p), byte(p >> 8)})
	return uint8(h.Sum32() % 10)
}
