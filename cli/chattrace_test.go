package cli

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/internal/otlptest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// TestChatStartsATrace: with OTEL_EXPORTER_OTLP_ENDPOINT set, `turnlog
// chat` is the root of a trace (a "turnlog chat" span without a parent),
// and the worker that serves its request continues that trace over NATS:
// its model calls' spans carry the chat's trace ID.
func TestChatStartsATrace(t *testing.T) {
	rc := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")

	e := newAuditEnv(t, false)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Log: e.log, Conn: e.log.JetStream().Conn(), Profiles: profiles,
		ShutdownGrace: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	out, errOut, code := e.run("", "chat", "-m", "hello", "traced")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "You said: hello\n", out)

	// chat flushes its spans before it exits.
	roots := rc.Named("turnlog chat")
	require.Len(t, roots, 1, "one span for the chat")
	root := roots[0]
	assert.Empty(t, root.ParentSpanId, "chat starts the trace")
	assert.Equal(t, "traced", otlptest.Attrs(root)["turnlog.conversation"].GetStringValue())
	calls := rc.Named("chat scripted")
	require.NotEmpty(t, calls, "the worker's model call is in the trace")
	for _, s := range calls {
		assert.Equal(t, hex.EncodeToString(root.TraceId), hex.EncodeToString(s.TraceId), "the model call continues chat's trace")
	}
}
