package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/natsauth"
)

// TestMetricsListenerNeedsTheToken: the --metrics listener of serve and
// worker serves its series only to a request that sends the token as
// "Authorization: Bearer": what a backend runs (requests by outcome,
// findings by rule) is not for every local user or network neighbour.
func TestMetricsListenerNeedsTheToken(t *testing.T) {
	const workerToken = "metrics-token-of-the-test-0123456789"
	for _, tc := range []struct {
		name string
		// start starts the command and returns its metrics listener's
		// base URL, the token it must require and the paths it serves.
		start func(t *testing.T) (base, token string, paths []string)
	}{
		{"serve: the HTTP API's token", func(t *testing.T) (string, string, []string) {
			s := startServe(t, "--metrics", "127.0.0.1:0", "--log-level", "info")
			return metricsURL(t, s.out), serveToken(t, s.data), []string{"/metrics", "/metrics/gateway"}
		}},
		{"serve without the HTTP API: its token all the same", func(t *testing.T) (string, string, []string) {
			s := startServe(t, "--metrics", "127.0.0.1:0", "--log-level", "info", "--http", "")
			return metricsURL(t, s.out), serveToken(t, s.data), []string{"/metrics"}
		}},
		{"worker: TURNLOG_METRICS_TOKEN", func(t *testing.T) (string, string, []string) {
			out := startWorkerCmd(t, []string{"TURNLOG_METRICS_TOKEN=" + workerToken}, "--workers", "2")
			return metricsURL(t, out), workerToken, []string{"/metrics", "/metrics/w2"}
		}},
		{"worker: --metrics-token-file", func(t *testing.T) (string, string, []string) {
			file := filepath.Join(t.TempDir(), "metrics.token")
			require.NoError(t, os.WriteFile(file, []byte(workerToken+"\n"), 0o600))
			out := startWorkerCmd(t, nil, "--metrics-token-file", file)
			return metricsURL(t, out), workerToken, []string{"/metrics"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, token, paths := tc.start(t)
			for _, path := range paths {
				code, body := getMetrics(t, base+path, "")
				assert.Equal(t, http.StatusUnauthorized, code, "%s without a token", path)
				assert.False(t, strings.Contains(body, "turnlog_") || strings.Contains(body, "go_"), "%s without a token: series in the body", path)
				assert.Contains(t, body, "Authorization: Bearer", "%s: the refusal says what is missing", path)

				code, body = getMetrics(t, base+path, "Bearer not-"+token)
				assert.Equal(t, http.StatusUnauthorized, code, "%s with a wrong token", path)
				assert.False(t, strings.Contains(body, "turnlog_"), "%s with a wrong token: series in the body", path)

				code, _ = getMetrics(t, base+path, "Basic "+token)
				assert.Equal(t, http.StatusUnauthorized, code, "%s with the token in another scheme", path)

				code, body = getMetrics(t, base+path, "Bearer "+token)
				assert.Equal(t, http.StatusOK, code, "%s with the token: %s", path, body)
				assert.True(t, strings.Contains(body, "turnlog_"), "%s with the token: no series", path)
			}
			code, body := getMetrics(t, base+"/metrics", "Bearer "+token)
			require.Equal(t, http.StatusOK, code)
			assert.True(t, strings.Contains(body, "turnlog_requests_total"), "no turnlog_requests_total")
		})
	}
}

// TestServeNoTokenOpensTheMetricsToo: --no-token, serve's explicit
// opt-out, leaves the --metrics listener without a token too, and says so.
func TestServeNoTokenOpensTheMetricsToo(t *testing.T) {
	s := startServe(t, "--no-token", "--metrics", "127.0.0.1:0", "--log-level", "info")
	code, body := getMetrics(t, metricsURL(t, s.out)+"/metrics", "")
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, strings.Contains(body, "turnlog_requests_total"), "no turnlog_requests_total")
	assert.Contains(t, s.out.String(), "WARNING: the metrics listener needs no token either (--no-token)")
}

// TestWorkerMetricsNeedATokenToStart: a worker whose --metrics listener
// would have no token refuses to start, saying what to set, instead of
// serving its series to anyone; so does a token file other users may read.
func TestWorkerMetricsNeedATokenToStart(t *testing.T) {
	srv := natstest.Start(t)
	open := filepath.Join(t.TempDir(), "open.token")
	require.NoError(t, os.WriteFile(open, []byte("a-token-for-everyone-0123456789\n"), 0o600))
	require.NoError(t, os.Chmod(open, 0o644))
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"no token", nil, []string{"--metrics", "127.0.0.1:0"},
			[]string{"--metrics 127.0.0.1:0", "TURNLOG_METRICS_TOKEN", "--metrics-token-file", "--metrics ''"}},
		{"an empty TURNLOG_METRICS_TOKEN", []string{"TURNLOG_METRICS_TOKEN="}, []string{"--metrics", "127.0.0.1:0"},
			[]string{"TURNLOG_METRICS_TOKEN", "--metrics-token-file"}},
		{"TURNLOG_METRICS on its own", []string{"TURNLOG_METRICS=127.0.0.1:0"}, nil,
			[]string{"TURNLOG_METRICS_TOKEN", "--metrics-token-file"}},
		{"a token file other users may read", nil, []string{"--metrics", "127.0.0.1:0", "--metrics-token-file", open},
			[]string{open, "chmod 600"}},
		{"a missing token file", nil, []string{"--metrics", "127.0.0.1:0", "--metrics-token-file", filepath.Join(t.TempDir(), "none")},
			[]string{"--metrics-token-file", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"TURNLOG_DATA=" + t.TempDir(), "TURNLOG_METRICS_TOKEN=", "TURNLOG_METRICS="}, tc.env...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, code := runCmdIn(ctx, t, env, "", append([]string{"worker", "--nats-url", srv.ClientURL(), "--log-level", "error"}, tc.args...)...)
			assert.NotEqual(t, 0, code, "the worker must refuse to start: %s", out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, "one line: %q", out)
		})
	}
}

// TestWorkerDefaultMetricsOffWithoutAToken: a worker started with no
// --metrics and no token (a bare `turnlog worker`) starts, with its
// default listener off and a line that says so and what to set; nothing
// listens on the default port.
func TestWorkerDefaultMetricsOffWithoutAToken(t *testing.T) {
	srv := natstest.Start(t)
	out := workerCmd(t, nil, "worker", "--nats-url", srv.ClientURL(), "--log-level", "info")
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "worker started") }, 20*time.Second, 20*time.Millisecond, "%s", out)
	assert.Contains(t, out.String(), "metrics listener off")
	assert.Contains(t, out.String(), "TURNLOG_METRICS_TOKEN")
	assert.NotContains(t, out.String(), `"msg":"metrics"`, "no listener opened")
}

// startWorkerCmd runs `turnlog worker --metrics 127.0.0.1:0` against a
// NATS server of its own, with env and args, until the test ends, and
// returns its output (its log at level info).
func startWorkerCmd(t *testing.T, env []string, args ...string) *syncbuf.Buffer {
	t.Helper()
	srv := natstest.Start(t)
	return workerCmd(t, env, append([]string{"worker", "--nats-url", srv.ClientURL(), "--metrics", "127.0.0.1:0", "--log-level", "info"}, args...)...)
}

// metricsURL waits for the log line of the metrics listener in out and
// returns the listener's base URL.
func metricsURL(t *testing.T, out *syncbuf.Buffer) string {
	t.Helper()
	re := regexp.MustCompile(`"msg":"metrics","url":"(http://[^"/]+)/metrics"`)
	var base string
	require.Eventually(t, func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
		return base != ""
	}, 60*time.Second, 20*time.Millisecond, "no metrics listener in the log: %s", out)
	return base
}

// serveToken is the HTTP API's token serve made in its data directory.
func serveToken(t *testing.T, data string) string {
	t.Helper()
	tok, err := natsauth.ReadToken(natsauth.TokenFile(natsauth.Dir(data)))
	require.NoError(t, err)
	return tok
}

// getMetrics GETs url with the Authorization header auth ("" sends none)
// and returns the status and the body.
func getMetrics(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}
