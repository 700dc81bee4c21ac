package worker

// This file holds how a worker notices that it lost the NATS cluster and
// that it has it back: each is logged once, however many partitions and
// requests saw the loss.

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// clusterLink tracks whether the worker reaches the cluster. Any part of
// the worker that sees a sign of loss (a dropped connection, a partition
// consumer without heartbeats, an append or a consumer that got no
// answer) reports it with lost; the first report is logged at WARN and
// starts a probe that asks JetStream every probeEvery until it answers,
// then logs the recovery at INFO. A worker on a node cut off from the
// others keeps its connection, so only such signs and the probe tell.
type clusterLink struct {
	log   *slog.Logger
	probe func(context.Context) error

	mu    sync.Mutex
	down  bool
	since time.Time
}

// probeEvery is how often a worker that lost the cluster asks whether it
// is back.
const probeEvery = time.Second

// lost reports a sign that the cluster is out of reach. ctx bounds the
// probe that follows the first sign.
func (c *clusterLink) lost(ctx context.Context, sign string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down || ctx.Err() != nil {
		return
	}
	c.down, c.since = true, time.Now()
	c.log.Warn("lost the NATS cluster; requests wait until it is back", "sign", sign, "err", err)
	go c.probeUntilBack(ctx)
}

// isDown reports whether the cluster is lost now; repeated signs of the
// same loss are then logged at DEBUG only.
func (c *clusterLink) isDown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down
}

func (c *clusterLink) probeUntilBack(ctx context.Context) {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		attempt, cancel := context.WithTimeout(ctx, 2*probeEvery)
		err := c.probe(attempt)
		cancel()
		if err == nil {
			c.mu.Lock()
			c.down = false
			c.log.Info("NATS cluster reachable again", "after", time.Since(c.since).Round(time.Millisecond))
			c.mu.Unlock()
			return
		}
	}
}
