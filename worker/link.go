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

// clusterLink tracks whether the worker reaches the cluster. It asks
// JetStream (probe, probeCluster in a worker) every healthyEvery, and every
// probeEvery while the cluster is lost; a worker on a node cut off from the
// others keeps its connection, and that node may even go on answering as
// meta or stream leader for a while, so only asking whether it still has a
// quorum tells. Parts of the worker that meet a sign
// of trouble (an append or a consumer without an answer) call suspect,
// which asks at once; a lost connection is a loss by itself. The loss is
// logged once at WARN, the recovery once at INFO.
type clusterLink struct {
	log   *slog.Logger
	probe func(context.Context) error
	nudge chan struct{}

	mu    sync.Mutex
	down  bool
	since time.Time
}

const (
	// healthyEvery is how often a worker that has the cluster checks it.
	healthyEvery = 5 * time.Second
	// probeEvery is how often a worker that lost the cluster asks whether
	// it is back.
	probeEvery = time.Second
)

func newClusterLink(log *slog.Logger, probe func(context.Context) error) *clusterLink {
	return &clusterLink{log: log, probe: probe, nudge: make(chan struct{}, 1)}
}

// run probes until ctx ends.
func (c *clusterLink) run(ctx context.Context) {
	t := time.NewTimer(healthyEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.nudge:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		attempt, cancel := context.WithTimeout(ctx, 2*probeEvery)
		err := c.probe(attempt)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.lost(lossSign(err), err)
		} else {
			c.back()
		}
		if c.isDown() {
			t.Reset(probeEvery)
		} else {
			t.Reset(healthyEvery)
		}
	}
}

// suspect asks the cluster at once whether it is there.
func (c *clusterLink) suspect() {
	select {
	case c.nudge <- struct{}{}:
	default:
	}
}

// lost records that the cluster is out of reach; the first of a stretch
// is logged.
func (c *clusterLink) lost(sign string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return
	}
	c.down, c.since = true, time.Now()
	c.log.Warn("lost the NATS cluster; requests wait until it is back", "sign", sign, "err", err)
}

// back records that the cluster answers again.
func (c *clusterLink) back() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.down {
		return
	}
	c.down = false
	c.log.Info("NATS cluster reachable again", "after", time.Since(c.since).Round(time.Millisecond))
}

// isDown reports whether the cluster is lost now; repeated signs of the
// same loss are then logged at DEBUG only.
func (c *clusterLink) isDown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down
}
