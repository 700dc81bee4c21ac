package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// findingsOf reads turnlog_findings_total by rule from a worker's metrics,
// as a scraper would.
func findingsOf(t *testing.T, w *worker.Worker) map[string]int {
	t.Helper()
	rec := httptest.NewRecorder()
	w.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^turnlog_findings_total\{rule="([a-z_]+)"\} (\d+)$`).FindAllStringSubmatch(rec.Body.String(), -1) {
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		out[m[1]] = n
	}
	return out
}

// operatorAppends stores p after conv's last event, as an operator's tool
// (or a buggy app sharing the log) would: the worker did not see it.
func operatorAppends(t *testing.T, l *eventlog.Log, conv string, p func(turn int) events.Payload) {
	t.Helper()
	ctx := context.Background()
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	_, err = l.Append(ctx, conv, turn.Seq, events.New(conv, "op-"+ulid.Make().String(), 0, "test.operator", p(len(turn.Blocks))))
	require.NoError(t, err)
}

// TestWorkerCountsFindings (issue 28): a worker counts the findings of
// replay --check's rules on the calls it makes in
// turnlog_findings_total{rule}, the same findings replay --check reports:
// a fault is counted at the call that first received it, not again at the
// calls that still carry it; its checker catches up with events it did not
// write (an operator's).
func TestWorkerCountsFindings(t *testing.T) {
	srv := natstest.Start(t)
	l, w := runWorker(t, srv, nil)
	ask1 := func(conv, text string) {
		t.Helper()
		res, err := ask(t, l, conv, text)
		require.NoError(t, err)
		require.Empty(t, res.Failed)
	}
	ask1("two-prompts", "hello")
	operatorAppends(t, l, "two-prompts", func(n int) events.Payload {
		return events.SystemPromptSet{BlockID: "second-prompt", Text: "Also be brief.", Index: n, Trust: events.Trusted}
	})
	ask1("two-prompts", "hello again")                      // its call first gets the second prompt
	ask1("two-prompts", "count the words in one two three") // two calls that still carry it
	ask1("stray-result", "hello")
	operatorAppends(t, l, "stray-result", func(int) events.Payload {
		return events.ToolResult{BlockID: "stray", CallID: "call-nobody-made", Text: "42"}
	})
	ask1("stray-result", "hello again")

	want := map[string]int{}
	for _, conv := range []string{"two-prompts", "stray-result"} {
		checked, err := replay.Check(context.Background(), l, conv)
		require.NoError(t, err)
		for _, f := range checked.Findings {
			want[string(f.Rule)]++
		}
	}
	require.Equal(t, 1, want["duplicate_system_prompt"], "%v", want)
	require.Equal(t, 1, want["tool_result_without_call"], "%v", want)

	// The worker checks beside the requests, in the order they ended: once
	// the last request's finding is counted, all are.
	deadline := time.Now().Add(30 * time.Second)
	for findingsOf(t, w)["tool_result_without_call"] == 0 {
		require.True(t, time.Now().Before(deadline), "the last request's finding was never counted: %v", findingsOf(t, w))
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, want, findingsOf(t, w), "what replay --check reports, each finding once")
}
