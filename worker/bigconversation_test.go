package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// TestLargeConversationKeepsAnswering is issue 24's bricked conversation:
// requests of 64 KiB (the largest text a request may carry) in one
// conversation, with the default profile and the scripted engine. The
// compaction that came due (around the 67th request at the default budget
// of 200 blocks) once wrote a summary as long as the transcript it
// summarized, a step the server could never store, so every request from
// then on failed and the conversation grew by each failed request's text.
// Every request must be answered, and the stored summary stays small.
//
// The budget here is 40 blocks, not 200: the transcript due for
// compaction (about 2.5 MB) is still more than a NATS message holds, so
// the bug is the same, at a sixth of the requests and a fraction of the
// bytes each one folds, wires and hashes (the race detector makes every
// byte copied costly: at 200 the test took over a minute and a half).
func TestLargeConversationKeepsAnswering(t *testing.T) {
	if testing.Short() {
		t.Skip("30 requests of 64 KiB")
	}
	budget := strings.Replace(profile.DefaultYAML, "compact_after_blocks: 200", "compact_after_blocks: 40", 1)
	require.NotEqual(t, profile.DefaultYAML, budget, "the default profile's compaction budget is where this test expects it")
	profiles, err := profile.Parse([]byte(budget))
	require.NoError(t, err)
	l := startWorker(t, natstest.Start(t), func(c *worker.Config) { c.Profiles = profiles })
	for i := 1; i <= 30; i++ {
		prefix := fmt.Sprintf("request %d ", i)
		text := prefix + strings.Repeat("x", worker.DefaultMaxTextBytes-len(prefix))
		require.Len(t, text, 64<<10)
		res, err := ask(t, l, "big", text)
		require.NoError(t, err, "request %d", i)
		require.Equal(t, "You said: "+text, res.Answer, "request %d", i)
	}
	turn, err := l.Load(context.Background(), "big")
	require.NoError(t, err)
	summaries := 0
	for _, b := range turn.Blocks {
		if b.Meta[middlewares.MetaCompactionSummary] == "true" {
			summaries++
			assert.LessOrEqual(t, len(b.Text), middlewares.DefaultMaxSummaryBytes, "a summary is bounded whatever the engine returns")
		}
	}
	assert.NotZero(t, summaries, "the conversation was compacted")
	failed := 0
	for ev, err := range l.Events(context.Background(), "big") {
		require.NoError(t, err)
		if ev.Event.Type == events.TypeRequestFailed {
			failed++
		}
	}
	assert.Zero(t, failed, "no request failed")
}

// A step the server cannot store (its max_payload is small here, as on a
// nats-server with its 1 MB default and a long message) fails its request
// with what to do, and the conversation keeps no more than the failure:
// the text that did not fit is not stored, and the next request is
// answered.
func TestStepTooLargeFailsWithoutGrowing(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxPayload(48<<10))
	l := startWorker(t, srv, nil)
	res, err := ask(t, l, "small", "hello")
	require.NoError(t, err)
	require.Empty(t, res.Failed)
	before, err := l.Load(context.Background(), "small")
	require.NoError(t, err)

	res, err = ask(t, l, "small", strings.Repeat("y", 47<<10))
	require.Error(t, err)
	assert.Contains(t, res.Failed, "step too large")
	assert.Contains(t, res.Failed, "send a shorter message")
	after, err := l.Load(context.Background(), "small")
	require.NoError(t, err)
	assert.Equal(t, len(before.Blocks), len(after.Blocks), "the text that did not fit is not in the conversation")

	res, err = ask(t, l, "small", "still there?")
	require.NoError(t, err)
	assert.Equal(t, "You said: still there?", res.Answer)
}
