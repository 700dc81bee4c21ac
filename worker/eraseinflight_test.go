package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// TestRequestInFlightDuringEraseIsNotWrittenBack: a conversation erased
// while a worker is in the middle of one of its requests stays erased. The
// worker's next step is refused (the log moved), and the request used to
// run again from the now empty log, writing the erased user's message and
// the answer back as a new conversation. A request made after the erasure
// starts the conversation anew, as erase promises.
func TestRequestInFlightDuringEraseIsNotWrittenBack(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	var armed atomic.Bool
	reached, erased := make(chan struct{}), make(chan struct{})
	l, w := runWorker(t, srv, func(c *worker.Config) {
		c.Fault = func(point string) error {
			if point == "step" && armed.CompareAndSwap(true, false) {
				close(reached)
				<-erased
			}
			return nil
		}
	})
	_, err := ask(t, l, "secret", "my account number is 42")
	require.NoError(t, err)

	armed.Store(true)
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "secret", Text: "and my PIN is 1234"})
	require.NoError(t, err)
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the request never reached its first step")
	}
	_, err = l.Erase(ctx, "secret")
	require.NoError(t, err)
	close(erased)

	require.Eventually(t, func() bool {
		return metricValue(t, w.Metrics().Handler(), `turnlog_requests_total{outcome="erased"}`) == 1
	}, 20*time.Second, 20*time.Millisecond, "the request is dropped and counted")
	assert.Empty(t, userTexts(t, l, "secret"), "nothing of the erased conversation is written back")

	// The ID can be used again: a request after the erasure starts anew.
	res, err := ask(t, l, "secret", "a new start")
	require.NoError(t, err)
	assert.Equal(t, "You said: a new start", res.Answer)
	assert.Equal(t, []string{"a new start"}, userTexts(t, l, "secret"))
}

// userTexts lists the text of each user message stored in conv.
func userTexts(t *testing.T, l *eventlog.Log, conv string) []string {
	t.Helper()
	turn, err := l.Load(t.Context(), conv)
	require.NoError(t, err)
	var out []string
	for _, b := range turn.Blocks {
		if b.Kind == events.KindUser {
			out = append(out, b.Text)
		}
	}
	return out
}
