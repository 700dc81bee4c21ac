package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// test.panics panics on a message that asks it to: a middleware's bug.
func init() {
	profile.RegisterMiddleware("test.panics", func(profile.MiddlewareSpec) (engine.Middleware, error) {
		return func(next engine.Handler) engine.Handler {
			return func(ctx context.Context, tx *engine.Tx) error {
				for _, b := range tx.Turn().Blocks {
					if b.Kind == events.KindUser && strings.Contains(b.Text, "panic") {
						panic("test.panics was asked to")
					}
				}
				return next(ctx, tx)
			}
		}, nil
	})
}

// TestPanickingMiddlewareFailsItsRequestOnly: a middleware that panicked
// ended the worker's process (serve, with its embedded NATS), and again at
// every redelivery of the request, until the queue gave up on it: the
// request then vanished, no request.failed, even its user message gone.
// The request fails with the panic's value, and the worker goes on
// serving.
func TestPanickingMiddlewareFailsItsRequestOnly(t *testing.T) {
	set, err := profile.Parse([]byte("profiles:\n  default:\n    middlewares: [logging, test.panics]\n"))
	require.NoError(t, err)
	l := startWorker(t, natstest.Start(t), func(c *worker.Config) { c.Profiles = set; c.AckWait = time.Second })
	_, err = ask(t, l, "bad", "please panic")
	require.ErrorIs(t, err, worker.ErrFailed)
	var failed []string
	for rec, err := range l.Events(context.Background(), "bad") {
		require.NoError(t, err)
		if p, ok := rec.Payload.(events.RequestFailed); ok {
			failed = append(failed, p.Reason)
		}
	}
	require.Len(t, failed, 1, "one request.failed")
	assert.Contains(t, failed[0], "panic: test.panics was asked to")
	res, err := ask(t, l, "good", "hello there")
	require.NoError(t, err, "the worker still serves")
	assert.NotEmpty(t, res.Answer)
	require.Eventually(t, func() bool { return pending(t, l) == 0 }, 10*time.Second, 20*time.Millisecond, "both requests are acknowledged")
}
