package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// TestRequestThatKillsEveryWorkerEndsRecorded: a request whose handling
// kills the worker at every delivery (an engine that runs the process out
// of memory, a kill by a supervisor) is given up on by JetStream after the
// consumer's last delivery. It must not vanish then: it ends as
// request.failed in its conversation, with the user's text and a reason
// that says what happened, and leaves the requests stream.
func TestRequestThatKillsEveryWorkerEndsRecorded(t *testing.T) {
	var crashes atomic.Int32
	l := startWorker(t, natstest.Start(t), func(c *worker.Config) {
		c.MaxDeliver = 1
		c.AckWait = worker.MinAckWait
		c.Fault = func(point string) error {
			if point == "user" {
				crashes.Add(1)
				return errors.New("killed")
			}
			return nil
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := worker.Send(ctx, l, worker.Request{Conversation: "doomed", Text: "the request that kills"})
	require.NoError(t, err)

	var failed *events.RequestFailed
	require.Eventually(t, func() bool {
		for rec, err := range l.Events(ctx, "doomed") {
			if err != nil {
				return false
			}
			if p, ok := rec.Payload.(events.RequestFailed); ok && rec.Cause == req.RequestID {
				failed = &p
			}
		}
		return failed != nil
	}, 45*time.Second, 100*time.Millisecond, "the request ends as request.failed in its conversation")
	assert.Contains(t, failed.Reason, "deliveries")
	assert.Contains(t, failed.Reason, "stopped")
	var users []string
	for rec, err := range l.Events(ctx, "doomed") {
		require.NoError(t, err)
		if p, ok := rec.Payload.(events.UserAppended); ok {
			users = append(users, p.Text)
		}
	}
	assert.Equal(t, []string{"the request that kills"}, users, "the user's text is kept with the failure")
	require.Eventually(t, func() bool { return pending(t, l) == 0 }, 10*time.Second, 50*time.Millisecond, "the request leaves the requests stream")
	assert.Equal(t, int32(1+worker.LostDeliveries), crashes.Load(), "every delivery was tried")
}
