package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// TestLongRequestKeepsItsDelivery: a request that takes several times the
// ack wait (a slow model, here a pause before its first step) stays with
// its worker: the in-progress reports restart the server's timer, so it is
// delivered once and answered once. The ack wait leaves a third of a
// second between the latest progress report and the server's timer: a
// shorter one (600 ms left 200 ms) failed on a machine busy enough to
// hold up the worker's ticker that long.
func TestLongRequestKeepsItsDelivery(t *testing.T) {
	const ackWait = time.Second
	srv := natstest.Start(t)
	slow := make(chan struct{}, 1)
	slow <- struct{}{}
	l, w := runWorker(t, srv, func(c *worker.Config) {
		c.AckWait = ackWait
		c.Fault = func(point string) error {
			if point == "step" {
				select {
				case <-slow: // the first step only
					time.Sleep(4 * ackWait)
				default:
				}
			}
			return nil
		}
	})
	res, err := ask(t, l, "slow", "take your time")
	require.NoError(t, err)
	assert.Equal(t, "You said: take your time", res.Answer)
	// A redelivery would have come while the first step waited; give a
	// late one the time to show before counting.
	time.Sleep(2 * ackWait)
	assert.Zero(t, metricValue(t, w.Metrics().Handler(), "turnlog_redeliveries_total"), "delivered once")
	users := 0
	for rec, err := range l.Events(t.Context(), "slow") {
		require.NoError(t, err)
		if rec.Type == "user.appended" {
			users++
		}
	}
	assert.Equal(t, 1, users, "answered once")
}
