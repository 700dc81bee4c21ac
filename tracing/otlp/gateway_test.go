package otlp_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/otlptest"
	"github.com/turnlog/turnlog/tracing"
	"github.com/turnlog/turnlog/tracing/otlp"
)

// TestGatewayCallSpanIsTheCallersChild sends a Chat Completions call
// through the recording gateway with a W3C traceparent, as an app's
// instrumented HTTP client would, and checks what an OTLP receiver got:
// the call's "chat {model}" span in the caller's trace, the caller's span
// as its parent, with the request's and the response's model, the
// response's ID and usage, and the position and input hash the log
// recorded for the call.
func TestGatewayCallSpanIsTheCallersChild(t *testing.T) {
	rc := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	shutdown, err := otlp.Setup(context.Background(), "turnlog-gateway")
	require.NoError(t, err)

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-traced-1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
	}))
	t.Cleanup(upstream.Close)

	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	const token = "tl-otlp-test-token-0123456789"
	g, err := gateway.New(gateway.Config{Log: l, Connected: srv.Conn.IsConnected, Token: token, OpenAIUpstream: upstream.URL + "/v1"})
	require.NoError(t, err)
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)

	const traceHex, parentHex = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, err := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-provider-key")
	req.Header.Set("Turnlog-Token", token)
	req.Header.Set("Traceparent", "00-"+traceHex+"-"+parentHex+"-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	conv := resp.Header.Get(gateway.ConversationHeader)
	require.NotEmpty(t, conv)

	flushCtx, flushCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer flushCancel()
	require.NoError(t, shutdown(flushCtx))

	spans := rc.Named("chat gpt-4o-mini")
	require.Len(t, spans, 1, "one span for the call, named after the request's model")
	s := spans[0]
	assert.Equal(t, traceHex, hex.EncodeToString(s.TraceId), "the span is in the caller's trace")
	assert.Equal(t, parentHex, hex.EncodeToString(s.ParentSpanId), "the span is the caller's child")
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, s.Kind)

	var started events.InferenceStarted
	var n int64
	for rec, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		if st, ok := rec.Event.Payload.(events.InferenceStarted); ok {
			started, n = st, int64(rec.Pos)
		}
	}
	require.NotZero(t, n, "the call is recorded")

	a := otlptest.Attrs(s)
	assert.Equal(t, "chat", a["gen_ai.operation.name"].GetStringValue())
	assert.Equal(t, "openai", a["gen_ai.provider.name"].GetStringValue())
	assert.Equal(t, "gpt-4o-mini", a["gen_ai.request.model"].GetStringValue())
	assert.Equal(t, "gpt-4o-mini-2024-07-18", a["gen_ai.response.model"].GetStringValue())
	assert.Equal(t, "chatcmpl-traced-1", a["gen_ai.response.id"].GetStringValue())
	assert.Equal(t, int64(12), a["gen_ai.usage.input_tokens"].GetIntValue())
	assert.Equal(t, int64(3), a["gen_ai.usage.output_tokens"].GetIntValue())
	assert.Equal(t, conv, a["gen_ai.conversation.id"].GetStringValue())
	assert.Equal(t, conv, a["turnlog.conversation"].GetStringValue())
	assert.Equal(t, n, a["turnlog.event"].GetIntValue(), "turnlog.event is the n of the call's inference.started")
	assert.Equal(t, started.InputHash, a["turnlog.input_hash"].GetStringValue())
	assert.Equal(t, started.InferenceID, a["turnlog.inference_id"].GetStringValue())
	assert.Equal(t, "new", a["turnlog.threading"].GetStringValue())
	assert.NotContains(t, a, "gen_ai.input.messages", "content stays off spans without --otel-content")
	assert.NotContains(t, a, "error.type")
	for _, kv := range s.Attributes {
		assert.NotContains(t, kv.Value.GetStringValue(), "sk-provider-key", "the provider key is never on a span")
	}
}

// TestGatewayCallContentFollowsTheConventions: with --otel-content, a
// call's output is the conventions' output message: one assistant
// message whose parts are the answer's, with its finish reason (it was a
// message a block, with no finish reason, which the conventions require).
func TestGatewayCallContentFollowsTheConventions(t *testing.T) {
	rc := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	shutdown, err := otlp.Setup(context.Background(), "turnlog-gateway")
	require.NoError(t, err)
	tracing.RecordContent(true)
	t.Cleanup(func() { tracing.RecordContent(false) })
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-2","object":"chat.completion","model":"m",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
	}))
	t.Cleanup(upstream.Close)
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: srv.Conn.IsConnected, Token: "tok-0123456789abcdef", OpenAIUpstream: upstream.URL + "/v1"})
	require.NoError(t, err)
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	req, err := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"Weather?"}]}`))
	require.NoError(t, err)
	req.Header.Set("Turnlog-Token", "tok-0123456789abcdef")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, shutdown(flushCtx))
	spans := rc.Named("chat m")
	require.Len(t, spans, 1)
	a := otlptest.Attrs(spans[0])
	assert.JSONEq(t, `[{"role":"user","parts":[{"type":"text","content":"Weather?"}]}]`, a["gen_ai.input.messages"].GetStringValue())
	assert.JSONEq(t, `[{"role":"assistant","finish_reason":"tool_calls","parts":[{"type":"text","content":"Let me look."},{"type":"tool_call","id":"call_1","name":"weather","arguments":"{}"}]}]`,
		a["gen_ai.output.messages"].GetStringValue())
	// The response reported no usage: the span says nothing of tokens,
	// rather than that the call read and wrote none.
	assert.NotContains(t, a, "gen_ai.usage.input_tokens")
	assert.NotContains(t, a, "gen_ai.usage.output_tokens")
}
