package webconsole_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/webconsole"
)

// get fetches path without following redirects.
func get(t *testing.T, ts *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(ts.URL + path)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(body)
}

func TestPages(t *testing.T) {
	mux := http.NewServeMux()
	webconsole.Register(mux, webconsole.Options{TokenRequired: true})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	tests := []struct {
		name       string
		path       string
		wantStatus int
		wantType   string
		want       []string
	}{
		{name: "conversations", path: "/ui/", wantStatus: 200, wantType: "text/html; charset=utf-8",
			want: []string{`data-page="conversations"`, `id="conversation-list"`, `data-token-required="true"`, `id="template-modal"`, `id="token-dialog"`}},
		{name: "conversation", path: "/ui/conversations/c-1", wantStatus: 200, wantType: "text/html; charset=utf-8",
			want: []string{`data-page="conversation"`, `data-conversation="c-1"`, `id="timeline"`, `href="/ui/chat/c-1"`}},
		{name: "chat", path: "/ui/chat/c_2", wantStatus: 200, wantType: "text/html; charset=utf-8",
			want: []string{`data-page="chat"`, `id="chat-form"`, `id="stream-state"`}},
		{name: "chat without a conversation", path: "/ui/chat/", wantStatus: 200, wantType: "text/html; charset=utf-8",
			want: []string{`id="pick-chat-form"`}},
		{name: "diff", path: "/ui/diff?a=x@1&b=x@2", wantStatus: 200, wantType: "text/html; charset=utf-8", want: []string{`id="diff-form"`}},
		{name: "template editor", path: "/ui/template", wantStatus: 200, wantType: "text/html; charset=utf-8", want: []string{`data-page="template"`}},
		{name: "a module", path: "/ui/assets/console.js", wantStatus: 200, wantType: "text/javascript; charset=utf-8", want: []string{"import"}},
		{name: "the style sheet", path: "/ui/assets/console.css", wantStatus: 200, wantType: "text/css; charset=utf-8"},
		{name: "a bad conversation ID", path: "/ui/conversations/a.b", wantStatus: 400, wantType: "text/html; charset=utf-8",
			want: []string{"which NATS subjects forbid"}},
		{name: "markup in an ID is refused, not rendered", path: "/ui/chat/%3Cscript%3E", wantStatus: 400, wantType: "text/html; charset=utf-8",
			want: []string{"use letters, digits"}},
		{name: "no such page", path: "/ui/nothing", wantStatus: 404, wantType: "text/html; charset=utf-8", want: []string{"There is no page /ui/nothing"}},
		{name: "no asset listing", path: "/ui/assets/", wantStatus: 404},
		{name: "no such asset", path: "/ui/assets/nope.js", wantStatus: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, ts, tc.path)
			assert.Equal(t, tc.wantStatus, res.StatusCode)
			if tc.wantType != "" {
				assert.Equal(t, tc.wantType, res.Header.Get("Content-Type"))
			}
			for _, w := range tc.want {
				assert.Contains(t, body, w)
			}
			assert.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'")
			assert.Contains(t, res.Header.Get("Content-Security-Policy"), "connect-src 'self'")
			assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
		})
	}

	res, _ := get(t, ts, "/")
	assert.Equal(t, http.StatusSeeOther, res.StatusCode)
	assert.Equal(t, "/ui/", res.Header.Get("Location"))
	// A page's address typed or pasted with a trailing slash goes to the
	// page (it was "There is no page").
	for path, to := range map[string]string{"/ui/conversations/c-1/": "/ui/conversations/c-1", "/ui/conversations/c-1/calls/": "/ui/conversations/c-1/calls"} {
		res, _ := get(t, ts, path)
		assert.Equal(t, http.StatusMovedPermanently, res.StatusCode, path)
		assert.Equal(t, to, res.Header.Get("Location"), path)
	}

	noToken := http.NewServeMux()
	webconsole.Register(noToken, webconsole.Options{})
	ts2 := httptest.NewServer(noToken)
	t.Cleanup(ts2.Close)
	_, body := get(t, ts2, "/ui/")
	assert.Contains(t, body, `data-token-required="false"`)
	assert.NotContains(t, body, `id="token-button"`)
}

// TestAssetsAreSelfContained reads every module the console loads: each
// import names an embedded file, and nothing points off the server.
func TestAssetsAreSelfContained(t *testing.T) {
	mux := http.NewServeMux()
	webconsole.Register(mux, webconsole.Options{})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	importRE := regexp.MustCompile(`(?m)^import .* from '\./([a-z]+\.js)';$`)
	seen := map[string]bool{}
	queue := []string{"console.js"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		res, body := get(t, ts, "/ui/assets/"+name)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s is imported but not embedded", name)
		assert.NotRegexp(t, `https?://`, body, "%s points off the server", name)
		for _, m := range importRE.FindAllStringSubmatch(body, -1) {
			queue = append(queue, m[1])
		}
	}
	assert.Subset(t, keys(seen), []string{"api.js", "dom.js", "editor.js", "conversations.js", "timeline.js", "diffview.js", "chat.js", "diffpage.js"})
	_, page := get(t, ts, "/ui/")
	assert.NotRegexp(t, `(src|href)="https?://`, page, "the page loads nothing from elsewhere")
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestServedByTheAPI checks the wiring: httpapi.New serves the console on
// its own port, and the API's JSON 404 is untouched.
func TestServedByTheAPI(t *testing.T) {
	l, err := eventlog.Open(context.Background(), natstest.Start(t).Conn)
	require.NoError(t, err)
	api, err := httpapi.New(httpapi.Config{Log: l, Token: "t0k"})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)

	res, body := get(t, ts, "/ui/")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, body, `data-token-required="true"`)
	res, _ = get(t, ts, "/")
	assert.Equal(t, "/ui/", res.Header.Get("Location"))
	res, _ = get(t, ts, "/no-such-route")
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "without the token, the API says nothing, not even which routes exist")
	req, err := http.NewRequest("GET", ts.URL+"/no-such-route", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer t0k")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	res.Body.Close()
	body = string(raw)
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"))
	assert.True(t, strings.Contains(body, `"error"`))
	req, err = http.NewRequest("GET", ts.URL+"/ui/", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://evil.example")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusForbidden, res.StatusCode, "the API's cross-site rule covers the console")
}
