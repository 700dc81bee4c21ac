package eventlog

// This file spreads the event shards' leaders over the servers. JetStream
// picks a replicated stream's first leader at random among its peers (the
// "preferred" peer of its raft group), so three R3 shards on three servers
// land on three distinct leaders only 2 times in 9, and a server that
// restarts leads nothing until an election moves a stream back to it. A
// shard's writes all go through its leader, so shards that share a leader
// share one server's write capacity.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go/jetstream"
)

// ShardLeader is one event stream and the server leading it.
type ShardLeader struct {
	Stream string `json:"stream"`
	// Leader is the leading server's name, "" while the stream elects one.
	Leader string `json:"leader"`
	// Peers are the servers holding a current replica, the leader included.
	Peers []string `json:"peers"`
}

// ShardLeaders reports who leads each event stream now.
func (l *Log) ShardLeaders(ctx context.Context) ([]ShardLeader, error) {
	if err := l.ensureHandles(ctx); err != nil {
		return nil, fmt.Errorf("shard leaders: %w", err)
	}
	out := make([]ShardLeader, len(l.shards))
	for k, s := range l.shards {
		info, err := s.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("shard leaders: %w", err)
		}
		out[k].Stream = info.Config.Name
		if info.Cluster == nil {
			continue
		}
		out[k].Leader = info.Cluster.Leader
		if info.Cluster.Leader != "" {
			out[k].Peers = append(out[k].Peers, info.Cluster.Leader)
		}
		for _, p := range info.Cluster.Replicas {
			if p != nil && p.Current && !p.Offline {
				out[k].Peers = append(out[k].Peers, p.Name)
			}
		}
	}
	return out, nil
}

// BalanceLeaders asks each event stream whose leader also leads another
// one to hand its leadership over to one of its current replicas that
// leads none, so that the shards' writes go through as many servers as
// there are. It returns how many hand-overs it asked for; each takes
// effect after a short election, so the caller looks again
// (ShardLeaders) before relying on it. With one shard, or streams of one
// replica, there is nothing to move. It needs the admin role (the API
// $JS.API.STREAM.LEADER.STEPDOWN.<stream>).
func (l *Log) BalanceLeaders(ctx context.Context) (int, error) {
	shards, err := l.ShardLeaders(ctx)
	if err != nil {
		return 0, err
	}
	leads := map[string]int{}
	for _, s := range shards {
		for _, p := range s.Peers {
			leads[p] += 0
		}
		if s.Leader != "" {
			leads[s.Leader]++
		}
	}
	moved := 0
	for _, s := range shards {
		if s.Leader == "" || leads[s.Leader] < 2 {
			continue
		}
		var idle []string
		for _, p := range s.Peers {
			if leads[p] == 0 {
				idle = append(idle, p)
			}
		}
		if len(idle) == 0 {
			continue
		}
		sort.Strings(idle)
		if err := l.stepDown(ctx, s.Stream, idle[0]); err != nil {
			return moved, fmt.Errorf("balance shard leaders: %s to %s: %w", s.Stream, idle[0], err)
		}
		leads[s.Leader]--
		leads[idle[0]]++
		moved++
	}
	return moved, nil
}

// stepDown asks stream's leader to hand over to the server named preferred.
func (l *Log) stepDown(ctx context.Context, stream, preferred string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.js.Options().DefaultTimeout)
		defer cancel()
	}
	prefix := l.js.Options().APIPrefix
	if prefix == "" {
		prefix = jetstream.DefaultAPIPrefix
	}
	body, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": preferred}})
	resp, err := l.nc.RequestWithContext(ctx, prefix+"STREAM.LEADER.STEPDOWN."+stream, body)
	if err != nil {
		return err
	}
	var r struct {
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return fmt.Errorf("step down answer: %w", err)
	}
	if r.Error != nil {
		return r.Error
	}
	return nil
}
