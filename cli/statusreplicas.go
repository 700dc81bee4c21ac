package cli

// This file holds what status says of a stream's replicas on a cluster:
// who leads it, how many replicas are current, which are offline or
// behind, so that a dead node shows on every row it held.

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// replicaHealth is the state of a stream's replicas on a cluster, as its
// info reports it; zero on a single server.
type replicaHealth struct {
	// Leader is the server the stream's writes go through.
	Leader string `json:"leader,omitempty"`
	// Current is how many replicas are caught up, the leader included.
	Current int `json:"replicas_current,omitempty"`
	// Offline names the replicas' servers that are down or cut off.
	Offline []string `json:"replicas_offline,omitempty"`
	// Lagging names the replicas that are up but behind the leader, each
	// with how many operations it lacks.
	Lagging []string `json:"replicas_lagging,omitempty"`
}

// replicaHealthOf reads a stream's replicas from its info (the leader
// only, on a server that is not part of a cluster).
func replicaHealthOf(info *jetstream.StreamInfo) replicaHealth {
	c := info.Cluster
	if c == nil {
		return replicaHealth{}
	}
	h := replicaHealth{Leader: c.Leader}
	if c.Name == "" {
		return h
	}
	if c.Leader != "" {
		h.Current = 1
	}
	for _, p := range c.Replicas {
		switch {
		case p.Offline:
			h.Offline = append(h.Offline, p.Name)
		case p.Current:
			h.Current++
		default:
			h.Lagging = append(h.Lagging, fmt.Sprintf("%s (%d behind)", p.Name, p.Lag))
		}
	}
	return h
}

// replicasCell is the REPLICAS cell of a row: the count, and on a cluster
// "(leader n1, 2 current, offline: n3)".
func replicasCell(replicas int, h replicaHealth) string {
	if h.Current == 0 && len(h.Offline) == 0 && len(h.Lagging) == 0 {
		return fmt.Sprint(replicas)
	}
	parts := []string{"leader " + orDash(h.Leader), fmt.Sprintf("%d current", h.Current)}
	if len(h.Offline) > 0 {
		parts = append(parts, "offline: "+strings.Join(h.Offline, ", "))
	}
	if len(h.Lagging) > 0 {
		parts = append(parts, "lagging: "+strings.Join(h.Lagging, ", "))
	}
	return fmt.Sprintf("%d (%s)", replicas, strings.Join(parts, ", "))
}
