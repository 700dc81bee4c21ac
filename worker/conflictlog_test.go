package worker_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/worker"
)

// TestRecoveredConflictIsNotLoggedAsError: another writer appends to a
// conversation the worker has cached, so the worker's next request is
// refused at its first append (stale expected sequence), reloads and
// completes. That is optimistic concurrency doing its job: it is counted
// by turnlog_conflicts_total and logged below ERROR, where an operator
// would read it as a failure.
func TestRecoveredConflictIsNotLoggedAsError(t *testing.T) {
	srv := natstest.Start(t)
	var logs syncbuf.Buffer
	l, w := runWorker(t, srv, func(c *worker.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Name = "cached"
	})
	_, err := ask(t, l, "conflict", "hello")
	require.NoError(t, err)
	assert.Zero(t, metricValue(t, w.Metrics().Handler(), "turnlog_conflicts_total"), "no conflict yet")

	// Another writer moves the conversation on behind the worker's cache.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	last, err := l.LastSeq(ctx, "conflict")
	require.NoError(t, err)
	_, err = l.Append(ctx, "conflict", last, events.New("conflict", ulid.Make().String(), 0, "someone-else", events.DataSet{Values: map[string]string{"k": "v"}}))
	require.NoError(t, err)

	res, err := ask(t, l, "conflict", "hello again")
	require.NoError(t, err)
	assert.Equal(t, "You said: hello again", res.Answer)

	out := logs.String()
	require.Contains(t, out, "expected last sequence", "the worker met the conflict (its cache was stale)")
	assert.Equal(t, 1.0, metricValue(t, w.Metrics().Handler(), "turnlog_conflicts_total"), "the recovered conflict is counted once")
	for _, line := range strings.Split(out, "\n") {
		assert.NotContains(t, line, `"level":"ERROR"`, "a recovered conflict logged as an error")
	}
}
