package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/natsauth"
)

// `turnlog gateway` beside a serve, as a second process would run it: the
// worker's credential from the data directory, a call recorded (the
// worker role opens and writes the threading index), and its metrics on
// the gateway's listener.
func TestGatewayCommand(t *testing.T) {
	s := startServe(t)
	t.Setenv("TURNLOG_ANTHROPIC_API_KEY", "sk-ant-managed-by-turnlog")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)

	base, out, _ := startGatewayCmd(t, s, "--openai-upstream", up.URL+"/v1")

	// The banner says where each SDK points and how it authenticates,
	// and never shows a provider key.
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Anthropic SDKs") }, 10*time.Second, 20*time.Millisecond)
	assert.Contains(t, out.String(), "OpenAI SDKs: base URL "+base+"/v1, forwarded to "+up.URL+"/v1; keys pass through: each call carries Turnlog-Token")
	assert.Contains(t, out.String(), "Anthropic SDKs: base URL "+base+", forwarded to https://api.anthropic.com; managed key (TURNLOG_ANTHROPIC_API_KEY): clients send turnlog's token as their API key")
	assert.NotContains(t, out.String(), "sk-ant-managed-by-turnlog")

	tok, err := os.ReadFile(natsauth.TokenFile(natsauth.Dir(s.data)))
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Turnlog-Token", strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "%s\n%s", body, out)
	assert.NotEmpty(t, resp.Header.Get("Turnlog-Conversation"))

	// The listener apps reach serves the metrics to turnlog's token only,
	// as a Prometheus scraper sends it (authorization: credentials_file).
	resp, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, _ = http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(metrics), `turnlog_gateway_calls_total{api="chat.completions",outcome="finished"} 1`)
	assert.Contains(t, string(metrics), "turnlog_gateway_added_seconds_count 1")
	assert.NotContains(t, out.String(), "Permissions Violation")
	// Another method on /metrics is 405 with the methods it takes, as
	// serve's listener answers, not 404 (which reads as a wrong path).
	resp, err = http.Post(base+"/metrics", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Allow"), "GET")

	// Its log is serve's: a JSON object a line (a log shipper reads both
	// alike). A call whose path shows a wrong base URL is logged at WARN.
	resp, err = http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	var warn map[string]any
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Contains(line, "base URL is wrong") {
				warn = nil
				return json.Unmarshal([]byte(line), &warn) == nil
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "no JSON line for the warning:\n%s", out)
	assert.Equal(t, "WARN", warn["level"])
}

// startGatewayCmd runs `turnlog gateway` beside serve s (its data
// directory, its NATS), on a free port with a spool, with args added, until
// the test ends; it returns the gateway's URL, from its banner, and what
// it printed, and what stops it before then.
func startGatewayCmd(t *testing.T, s *served, args ...string) (string, *syncbuf.Buffer, func()) {
	t.Helper()
	return runGatewayCmd(t, append([]string{"--data", s.data, "--nats-url", s.natsURL,
		"--record-optional", "--spool-dir", filepath.Join(t.TempDir(), "spool")}, args...)...)
}

// runGatewayCmd runs `turnlog gateway --listen 127.0.0.1:0` with args
// until the test ends, and waits for its banner; it returns the gateway's
// URL, what it printed, and what stops it before then.
func runGatewayCmd(t *testing.T, args ...string) (string, *syncbuf.Buffer, func()) {
	t.Helper()
	out := &syncbuf.Buffer{}
	root := newRootCmd()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs(append([]string{"gateway", "--listen", "127.0.0.1:0"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	urlRe := regexp.MustCompile(`gateway on (http://\S+)`)
	var base string
	require.Eventually(t, func() bool {
		if m := urlRe.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
		return base != ""
	}, 60*time.Second, 20*time.Millisecond, "no banner: %s", out)
	return base, out, stop
}
