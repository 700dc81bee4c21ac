package otlp_test

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	_ "github.com/turnlog/turnlog/engine/scripted" // the default profile's engine
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/otlptest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/tracing/otlp"
	"github.com/turnlog/turnlog/worker"
)

// TestModelCallSpansReachAnOTLPReceiver sends a chat request over NATS
// with a caller's trace context, served by a worker with the scripted
// engine, and checks what an OTLP receiver got: a GenAI span per model
// call, in the caller's trace, under the worker's span for the request,
// with the attributes that lead back to the record, and no content.
func TestModelCallSpansReachAnOTLPReceiver(t *testing.T) {
	rc := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_SERVICE_NAME", "turnlog-under-test")
	require.True(t, otlp.Enabled())
	shutdown, err := otlp.Setup(context.Background(), "turnlog")
	require.NoError(t, err)

	l := startWorker(t)

	// The caller's span, as another service's SDK would have started it.
	traceID, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	parentID, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	caller := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: parentID, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
	askCtx, askCancel := context.WithTimeout(caller, 30*time.Second)
	defer askCancel()
	req, err := worker.Send(askCtx, l, worker.Request{Conversation: "traced", Text: "count the words in a b c"})
	require.NoError(t, err)
	res, err := worker.Await(askCtx, l, "traced", req.RequestID, 0, 0)
	require.NoError(t, err)
	require.NotEmpty(t, res.Answer)
	waitForRequestSpan(t, rc)

	flushCtx, flushCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer flushCancel()
	require.NoError(t, shutdown(flushCtx))

	requests := rc.Named("process turnlog.chat")
	require.Len(t, requests, 1, "one span for the worker serving the request")
	reqSpan := requests[0]
	assert.Equal(t, hex.EncodeToString(traceID[:]), hex.EncodeToString(reqSpan.TraceId), "the worker continues the caller's trace")
	assert.Equal(t, hex.EncodeToString(parentID[:]), hex.EncodeToString(reqSpan.ParentSpanId), "the worker's span is the caller's child")

	var calls []*tracepb.Span
	for _, s := range rc.Spans() {
		if a := otlptest.Attrs(s); a["gen_ai.operation.name"].GetStringValue() == "chat" {
			calls = append(calls, s)
		}
	}
	assert.Contains(t, rc.Paths(), "/v1/traces")
	require.Len(t, calls, 2, "the tool loop makes two model calls: one that calls the tool, one that answers")
	// What the log recorded of each call: its position and input hash.
	recorded := map[int64]string{}
	for rec, err := range l.Events(context.Background(), "traced") {
		require.NoError(t, err)
		if st, ok := rec.Event.Payload.(events.InferenceStarted); ok {
			recorded[int64(rec.Pos)] = st.InputHash
		}
	}
	require.Len(t, recorded, 2)
	for _, s := range calls {
		a := otlptest.Attrs(s)
		assert.Equal(t, hex.EncodeToString(traceID[:]), hex.EncodeToString(s.TraceId))
		assert.Equal(t, reqSpan.SpanId, s.ParentSpanId, "a model call nests under the request's span")
		assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, s.Kind)
		model := a["gen_ai.request.model"].GetStringValue()
		require.NotEmpty(t, model)
		assert.Equal(t, "chat "+model, s.Name)
		assert.Equal(t, "turnlog.scripted", a["gen_ai.provider.name"].GetStringValue())
		assert.Equal(t, "traced", a["gen_ai.conversation.id"].GetStringValue())
		assert.Equal(t, "traced", a["turnlog.conversation"].GetStringValue())
		n := a["turnlog.event"].GetIntValue()
		require.Contains(t, recorded, n, "turnlog.event is the n of a recorded inference.started")
		assert.Equal(t, recorded[n], a["turnlog.input_hash"].GetStringValue(), "the span's input hash is the one recorded at that event")
		assert.Contains(t, a, "gen_ai.usage.input_tokens")
		assert.Contains(t, a, "gen_ai.usage.output_tokens")
		assert.NotContains(t, a, "gen_ai.input.messages", "content stays off spans without --otel-content")
		assert.NotContains(t, a, "error.type")
	}
	assert.Equal(t, "turnlog-under-test", rc.Resource("service.name"), "OTEL_SERVICE_NAME is honoured")
}

// startWorker runs a worker with the built-in profiles on an embedded
// server until the test ends, and returns its log.
func startWorker(t *testing.T) *eventlog.Log {
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Log: l, Conn: srv.Conn, Profiles: profiles, AckWait: 2 * time.Second, ShutdownGrace: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// TestFailedRequestSpanSaysSo: a request that ends in request.failed (here
// a profile the worker does not have) left the worker's span with status
// Unset, as if it had been answered. Its span's status is Error, with the
// reason the log records.
func TestFailedRequestSpanSaysSo(t *testing.T) {
	rc := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	shutdown, err := otlp.Setup(context.Background(), "turnlog")
	require.NoError(t, err)
	l := startWorker(t)

	askCtx, askCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer askCancel()
	req, err := worker.Send(askCtx, l, worker.Request{Conversation: "failing", Text: "hi", Profile: "no-such-profile"})
	require.NoError(t, err)
	_, err = worker.Await(askCtx, l, "failing", req.RequestID, 0, 0)
	require.ErrorIs(t, err, worker.ErrFailed)
	waitForRequestSpan(t, rc)
	flushCtx, flushCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer flushCancel()
	require.NoError(t, shutdown(flushCtx))
	spans := rc.Named("process turnlog.chat")
	require.Len(t, spans, 1)
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, spans[0].GetStatus().GetCode())
	assert.Contains(t, spans[0].GetStatus().GetMessage(), `unknown profile "no-such-profile"`)
}

// waitForRequestSpan waits until the receiver has the worker's request
// span. The worker ends it once it has acknowledged the request, a moment
// after the outcome a client awaits is stored: a shutdown right after the
// client's wait could come first and drop the span (seen once on a busy
// CI machine). A wait for an event, not a measurement.
func waitForRequestSpan(t *testing.T, rc *otlptest.Receiver) {
	t.Helper()
	require.Eventually(t, func() bool { return len(rc.Named("process turnlog.chat")) > 0 }, 20*time.Second, 20*time.Millisecond,
		"the worker's request span is exported")
}
