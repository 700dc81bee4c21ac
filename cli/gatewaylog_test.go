package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestGatewayLogsTheLogsWarningsAsJSON: `turnlog gateway` logs JSON lines,
// but the event log it opened warned through slog's default logger, in
// Go's plain text format ("2026/11/29 22:46:59 WARN snapshot not read;
// loading from the log ..."), in the middle of the JSON (seen while NATS
// was away, on every conversation the spool's drain loaded). Here a
// corrupt snapshot makes the log warn as the gateway loads a
// conversation: the warning is a JSON line like the gateway's own.
func TestGatewayLogsTheLogsWarningsAsJSON(t *testing.T) {
	s := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	_, err = l.Append(context.Background(), "logged", 0, events.New("logged", "seed", 0, "import", events.UserAppended{BlockID: "u1", Text: "hi"}))
	require.NoError(t, err)
	js, err := jetstream.New(s.Conn)
	require.NoError(t, err)
	kv, err := js.KeyValue(context.Background(), l.Names().SnapshotsBucket)
	require.NoError(t, err)
	_, err = kv.Put(context.Background(), "logged", []byte("short"))
	require.NoError(t, err)

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	const tok = "tl-logformat-token-0123456789"
	t.Setenv("TURNLOG_TOKEN", tok)
	base, out, _ := runGatewayCmd(t, "--data", t.TempDir(), "--nats-url", s.ClientURL(), "--openai-upstream", up.URL+"/v1")

	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":"again"}]}`))
	req.Header.Set("Turnlog-Token", tok)
	req.Header.Set("Turnlog-Conversation", "logged")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var warned bool
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "turnlog: ") {
			continue // the start-up banner, plain text by design
		}
		var rec map[string]any
		if !assert.NoError(t, json.Unmarshal([]byte(line), &rec), "a log line that is not JSON: %q", line) {
			continue
		}
		warned = warned || strings.Contains(rec["msg"].(string), "corrupt snapshot")
	}
	assert.True(t, warned, "the log's warning is in the gateway's log:\n%s", out)
}
