package cli

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
)

// TestTraceExportFailuresAreSaid: spans a receiver refused were dropped
// with a line of Go's default logger per failure (outside the command's
// output, naming no endpoint), and the last spans' failure at exit was
// thrown away. They are said on the command's output, with where the
// spans were to go.
func TestTraceExportFailuresAreSaid(t *testing.T) {
	receiver := refusingReceiver(t)
	out := exportOneSpan(t, "OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	assert.Contains(t, out, "turnlog: OpenTelemetry: spans not exported to "+receiver.URL+" (/v1/traces), dropped:")
	assert.Contains(t, out, "400 Bad Request")
}

// refusingReceiver is an OTLP receiver that refuses every export with a
// 400, which the exporter does not retry.
func refusingReceiver(t *testing.T) *httptest.Server {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	t.Cleanup(receiver.Close)
	return receiver
}

// exportOneSpan starts tracing with variable set to endpoint, ends one
// span, stops, and returns what the command said.
func exportOneSpan(t *testing.T, variable, endpoint string) string {
	t.Setenv(variable, endpoint)
	var out strings.Builder
	stop, err := startTracing(context.Background(), "turnlog-test", false, &out)
	require.NoError(t, err)
	_, span := otel.Tracer("test").Start(context.Background(), "call")
	span.End()
	stop()
	return out.String()
}

// TestExportErrorsAreSaidOnceAMinute: a receiver that stays away is said
// once a minute, with the count of failures since, not once a batch.
func TestExportErrorsAreSaidOnceAMinute(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out strings.Builder
	h := &exportErrors{w: &out, endpoint: "http://collector:4318", now: func() time.Time { return now }}
	for range 5 {
		h.Handle(errors.New("connection refused"))
		now = now.Add(10 * time.Second)
	}
	now = now.Add(20 * time.Second)
	h.Handle(errors.New("connection refused"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, "turnlog: OpenTelemetry: spans not exported to http://collector:4318, dropped: connection refused", lines[0])
	assert.Contains(t, lines[1], "(and 4 failures more since the last said)")
}

// TestTraceExportFailureHidesTheEndpointsSecrets: the endpoint was printed
// as the variable held it, a password in its user info or a key in its
// query with it (found by the observability probe).
func TestTraceExportFailureHidesTheEndpointsSecrets(t *testing.T) {
	receiver := refusingReceiver(t)
	withSecrets := strings.Replace(receiver.URL, "http://", "http://tracer:TRACESPASS@", 1) + "/v1/traces?api_key=QUERYKEY"
	out := exportOneSpan(t, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", withSecrets)
	assert.Contains(t, out, "spans not exported to http://tracer:xxxxx@")
	assert.NotContains(t, out, "TRACESPASS")
	assert.NotContains(t, out, "QUERYKEY")
}

// TestChatSaysSpansItCouldNotExport: turnlog chat threw its exporter's
// errors away, so a collector that was down lost the chat's spans without
// a word (found by the observability probe); serve and gateway said so.
func TestChatSaysSpansItCouldNotExport(t *testing.T) {
	e := newAuditEnv(t, true)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // nothing listens there any more
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", dead.URL)
	_, errOut, code := e.run("", "chat", "-m", "hi", "traced-chat")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "turnlog: OpenTelemetry: ")
	assert.Contains(t, errOut, "not exported")
}
