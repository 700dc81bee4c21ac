package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/templates"
)

const token = "s3cret-token"

// startAPI serves the API of a fresh installation on an embedded NATS
// server, with token ("" for none).
func startAPI(t *testing.T, token string) (*httptest.Server, *templates.Store) {
	t.Helper()
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	api, err := httpapi.New(httpapi.Config{Log: l, Token: token})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	return ts, templates.New(l)
}

// call makes a request; auth "" sends no Authorization header. It returns
// the status and the decoded JSON body.
func call(t *testing.T, ts *httptest.Server, method, path, auth, body string) (int, map[string]any, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"), "%s %s", method, path)
	var out map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out), "%s %s: the body is JSON", method, path)
	return res.StatusCode, out, res.Header
}

func TestGetSystemPromptDefault(t *testing.T) {
	ts, _ := startAPI(t, token)
	status, body, _ := call(t, ts, "GET", "/system-prompt", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, templates.Default, body["template"])
	assert.Equal(t, true, body["default"])
}

func TestPutSystemPrompt(t *testing.T) {
	ts, store := startAPI(t, token)
	const tmpl = "Be brief. [if git:branch]Branch [git:branch].[endif]\nÜnïcode <b>&</b>"
	in, _ := json.Marshal(map[string]string{"template": tmpl})

	status, body, _ := call(t, ts, "PUT", "/system-prompt", "Bearer "+token, string(in))
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, map[string]any{"template": tmpl, "warnings": []any{}}, body, "it returns what it stored, and no warning")

	status, body, _ = call(t, ts, "GET", "/system-prompt", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, map[string]any{"template": tmpl}, body, "no longer the default")
	stored, err := store.Template(context.Background())
	require.NoError(t, err)
	assert.Equal(t, tmpl, stored, "persisted in the bucket")

	status, body, _ = call(t, ts, "PUT", "/system-prompt", "bearer "+token, `{"template": ""}`)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "", body["template"], "an empty template (no system prompt) is a valid one")
}

func TestPutSystemPromptNeedsToken(t *testing.T) {
	ts, store := startAPI(t, token)
	tests := []struct {
		name string
		auth string
		want string
	}{
		{name: "missing", auth: "", want: "requires a token"},
		{name: "wrong", auth: "Bearer not-the-token", want: "token is wrong"},
		{name: "prefix of the token", auth: "Bearer s3cret", want: "token is wrong"},
		{name: "another scheme", auth: "Basic " + token, want: "requires a token"},
		{name: "no scheme", auth: token, want: "requires a token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, h := call(t, ts, "PUT", "/system-prompt", tc.auth, `{"template": "hacked"}`)
			assert.Equal(t, http.StatusUnauthorized, status)
			assert.Contains(t, body["error"], tc.want)
			assert.Equal(t, `Bearer realm="turnlog"`, h.Get("WWW-Authenticate"))
		})
	}
	status, _, _ := call(t, ts, "POST", "/system-prompt/render", "", `{"template": "[system:os]"}`)
	assert.Equal(t, http.StatusUnauthorized, status, "render reads files: it needs the token too")
	g, err := store.Global(context.Background())
	require.NoError(t, err)
	assert.True(t, g.Default, "nothing was stored")
}

func TestPutSystemPromptBadBodies(t *testing.T) {
	ts, store := startAPI(t, token)
	tests := []struct {
		name       string
		body       string
		wantStatus int
		want       string
	}{
		{name: "empty", body: "", wantStatus: 400, want: "body is empty"},
		{name: "not JSON", body: "You are a pirate.", wantStatus: 400, want: "malformed body"},
		{name: "truncated", body: `{"template": "x`, wantStatus: 400, want: "malformed body"},
		{name: "no template key", body: `{}`, wantStatus: 400, want: `no "template" key`},
		{name: "null template", body: `{"template": null}`, wantStatus: 400, want: `no "template" key`},
		{name: "wrong type", body: `{"template": 42}`, wantStatus: 400, want: "malformed body"},
		{name: "unknown key", body: `{"template": "x", "tmpl": "y"}`, wantStatus: 400, want: `unknown field "tmpl"`},
		{name: "two values", body: `{"template": "x"} {"template": "y"}`, wantStatus: 400, want: "more than one JSON value"},
		{name: "an array", body: `["x"]`, wantStatus: 400, want: "malformed body"},
		{name: "template over the template limit", body: `{"template": "` + strings.Repeat("x", templates.MaxBytes+1) + `"}`, wantStatus: 400, want: "the limit is"},
		{name: "body over 1 MiB", body: `{"template": "` + strings.Repeat("x", 1<<20) + `"}`, wantStatus: 413, want: "larger than 1048576 bytes"},
		{name: "valid value, then padding past 1 MiB", body: `{"template": "x"}` + strings.Repeat(" ", 1<<20), wantStatus: 413, want: "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := call(t, ts, "PUT", "/system-prompt", "Bearer "+token, tc.body)
			assert.Equal(t, tc.wantStatus, status)
			assert.Contains(t, body["error"], tc.want)
		})
	}
	g, err := store.Global(context.Background())
	require.NoError(t, err)
	assert.True(t, g.Default, "no bad body stored anything")
}

func TestGetVariables(t *testing.T) {
	ts, _ := startAPI(t, token)
	req, err := http.NewRequest("GET", ts.URL+"/system-prompt/variables", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var body struct {
		Variables []template.Variable `json:"variables"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	assert.Equal(t, template.Catalog(), body.Variables)

	status, raw, _ := call(t, ts, "GET", "/system-prompt/variables", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status)
	first := raw["variables"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"name": "system:time", "description": first["description"], "dynamic": false}, first)
}

func TestRender(t *testing.T) {
	ts, _ := startAPI(t, token)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Use tabs."), 0o600))
	auth := "Bearer " + token

	in, _ := json.Marshal(map[string]string{"template": "[if file:AGENTS.md]Notes: [file:AGENTS.md][endif] in [prompt:cwd] for [prompt:model][file:missing]", "cwd": dir, "model": "m"})
	status, body, _ := call(t, ts, "POST", "/system-prompt/render", auth, string(in))
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "Notes: Use tabs. in "+dir+" for m", body["prompt"])
	assert.Equal(t, map[string]any{"file:AGENTS.md": "Use tabs.", "prompt:cwd": dir, "prompt:model": "m"}, body["variables"])

	// Without a template: the stored one (here the default).
	in, _ = json.Marshal(map[string]string{"cwd": dir})
	status, body, _ = call(t, ts, "POST", "/system-prompt/render", auth, string(in))
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "You are a helpful assistant.\n\nProject instructions (from AGENTS.md):\n\nUse tabs.\n\nWorking directory: "+dir, body["prompt"])

	status, body, _ = call(t, ts, "POST", "/system-prompt/render", auth, `{"template": "  "}`)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, map[string]any{"prompt": "", "variables": map[string]any{}, "warnings": []any{}}, body, "no system prompt")

	status, body, _ = call(t, ts, "POST", "/system-prompt/render", auth, `{"template": "x", "cwd": "relative/dir"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body["error"], "is relative")

	status, body, _ = call(t, ts, "POST", "/system-prompt/render", auth, `{"template": "x", "cwd": 1}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body["error"], "malformed body")
}

func TestUnknownRoutesAndMethodsAnswerJSON(t *testing.T) {
	ts, _ := startAPI(t, token)
	status, body, h := call(t, ts, "DELETE", "/system-prompt", "Bearer "+token, "")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	assert.Contains(t, body["error"], "GET")
	assert.Contains(t, h.Get("Allow"), "PUT")

	status, body, _ = call(t, ts, "GET", "/nope", "Bearer "+token, "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body["error"], "no such route")

	// Erasing is not done over HTTP: a DELETE of a conversation says so,
	// and how, where it was "no such route".
	status, body, h = call(t, ts, "DELETE", "/conversations/c1", "Bearer "+token, "")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	assert.Contains(t, body["error"], "turnlog erase c1")
	assert.Contains(t, h, "Allow", "no method is allowed there")
	status, body, _ = call(t, ts, "GET", "/conversations/c1", "Bearer "+token, "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body["error"], "/conversations/c1/timeline")
	status, _, _ = call(t, ts, "DELETE", "/conversations/c1", "", "")
	assert.Equal(t, http.StatusUnauthorized, status, "the token first")
}

func TestWritesWithoutTokenConfigured(t *testing.T) {
	ts, _ := startAPI(t, "")
	status, body, _ := call(t, ts, "PUT", "/system-prompt", "", `{"template": "open"}`)
	assert.Equal(t, http.StatusOK, status, "%v", body)
}

func TestBrowserAttacksRefused(t *testing.T) {
	ts, _ := startAPI(t, "")
	do := func(method, host, origin, body string) (int, map[string]any) {
		req, err := http.NewRequest(method, ts.URL+"/system-prompt", strings.NewReader(body))
		require.NoError(t, err)
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := ts.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
		return res.StatusCode, out
	}
	status, body := do("PUT", "", "https://evil.example", `{"template": "x"}`)
	assert.Equal(t, http.StatusForbidden, status, "a cross-site write")
	assert.Contains(t, body["error"], "cross-origin")

	status, body = do("GET", "evil.example:8080", "", "")
	assert.Equal(t, http.StatusForbidden, status, "DNS rebinding: a foreign name for a token-less local server")
	assert.Contains(t, body["error"], "--allowed-hosts")

	status, _ = do("GET", "localhost:8080", "http://localhost:8080", "")
	assert.Equal(t, http.StatusOK, status, "the server's own origin")
	status, _ = do("GET", "[::1]:8080", "", "")
	assert.Equal(t, http.StatusOK, status)
}

func TestStart(t *testing.T) {
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	api, err := httpapi.New(httpapi.Config{Log: l})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	run, err := httpapi.Start(ctx, "127.0.0.1:0", api, nil)
	require.NoError(t, err)
	res, err := http.Get(run.URL() + "/system-prompt/variables")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	_, err = httpapi.Start(context.Background(), run.Addr().String(), api, nil)
	assert.ErrorContains(t, err, "pick a free HOST:PORT", "a port in use is reported at once")

	cancel()
	require.NoError(t, run.Close(), "Close after the context ended is harmless")
	_, err = http.Get(run.URL() + "/system-prompt/variables")
	assert.Error(t, err, "stopped")
}

func TestConfigValidate(t *testing.T) {
	_, err := httpapi.New(httpapi.Config{})
	assert.ErrorContains(t, err, "Log is nil")
}

// TestURLOfEveryInterface: a server on every interface (--http
// 0.0.0.0:PORT) said its base URL was http://[::]:PORT, the address its
// listener reports, which no client calls; it is the loopback's, where a
// client on this machine reaches it.
func TestURLOfEveryInterface(t *testing.T) {
	run, err := httpapi.Start(t.Context(), "0.0.0.0:0", http.NotFoundHandler(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = run.Close() })
	port := run.Addr().(*net.TCPAddr).Port
	assert.Equal(t, "http://127.0.0.1:"+strconv.Itoa(port), run.URL())
	res, err := http.Get(run.URL() + "/")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "the URL reaches it")
}
