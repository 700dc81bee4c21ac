package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
)

// request is one HTTP request a browser or a script could send.
type request struct {
	method, path, host, origin, fetchSite, auth, body string
}

func (r request) do(t *testing.T, ts *httptest.Server) (int, string) {
	t.Helper()
	req, err := http.NewRequest(r.method, ts.URL+r.path, strings.NewReader(r.body))
	require.NoError(t, err)
	if r.host != "" {
		req.Host = r.host
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	if r.fetchSite != "" {
		req.Header.Set("Sec-Fetch-Site", r.fetchSite)
	}
	if r.auth != "" {
		req.Header.Set("Authorization", r.auth)
	}
	res, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out struct {
		Error string `json:"error"`
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		_ = json.NewDecoder(res.Body).Decode(&out)
	}
	return res.StatusCode, out.Error
}

// startAPIWith serves the API with cfg's security settings (Log is filled
// in).
func startAPIWith(t *testing.T, cfg httpapi.Config) *httptest.Server {
	t.Helper()
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	cfg.Log = l
	api, err := httpapi.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	return ts
}

// TestDNSRebindingWithToken reproduces issue 15, item 3: with a token set,
// a request addressed to a foreign name (a DNS-rebinding page's) read
// every conversation, because the Host check ran only without a token.
func TestDNSRebindingWithToken(t *testing.T) {
	ts := startAPIWith(t, httpapi.Config{Token: token})
	for _, r := range []request{
		{method: "GET", path: "/conversations", host: "evil.example"},
		{method: "GET", path: "/conversations", host: "evil.example:8080", auth: "Bearer " + token},
		{method: "GET", path: "/conversations/x/stream", host: "evil.example"},
		{method: "GET", path: "/system-prompt", host: "evil.example"},
		{method: "PUT", path: "/system-prompt", host: "evil.example", auth: "Bearer " + token, body: `{"template": "x"}`},
	} {
		status, msg := r.do(t, ts)
		assert.Equal(t, http.StatusForbidden, status, "%s %s with Host %s", r.method, r.path, r.host)
		assert.Contains(t, msg, "evil.example")
	}
}

// TestReadsNeedTheToken: with a token, reads need it as writes do (the
// HTTP side of issue 15, item 2: the Turn held the server's command line);
// the console's pages, which hold no data, load without it.
func TestReadsNeedTheToken(t *testing.T) {
	ts := startAPIWith(t, httpapi.Config{Token: token})
	for _, path := range []string{"/conversations", "/conversations/c1/events", "/conversations/c1/turn", "/conversations/c1/stream",
		"/system-prompt", "/system-prompt/variables", "/diff?a=c1@0&b=c1@0"} {
		status, msg := request{method: "GET", path: path}.do(t, ts)
		assert.Equal(t, http.StatusUnauthorized, status, "GET %s without the token", path)
		assert.Contains(t, msg, "token", path)
		status, _ = request{method: "GET", path: path, auth: "Bearer wrong"}.do(t, ts)
		assert.Equal(t, http.StatusUnauthorized, status, "GET %s with a wrong token", path)
	}
	status, msg := request{method: "GET", path: "/conversations", auth: "Bearer " + token}.do(t, ts)
	assert.Equal(t, http.StatusOK, status, msg)
	for _, path := range []string{"/ui/", "/ui/chat/c1", "/ui/assets/api.js"} {
		status, _ := request{method: "GET", path: path}.do(t, ts)
		assert.Equal(t, http.StatusOK, status, "console page %s", path)
	}
	status, _ = request{method: "GET", path: "/"}.do(t, ts)
	assert.Equal(t, http.StatusOK, status, "/ redirects to the console")
}

// TestCrossSiteWritesRefused: a write that a browser marks as sent by
// another site (Sec-Fetch-Site) is refused, even with the token (a page
// cannot have it, but a browser extension or a leaked header could).
func TestCrossSiteWritesRefused(t *testing.T) {
	ts := startAPIWith(t, httpapi.Config{Token: token})
	put := request{method: "PUT", path: "/system-prompt", auth: "Bearer " + token, body: `{"template": "x"}`}
	for _, site := range []string{"cross-site", "same-site"} {
		r := put
		r.fetchSite = site
		status, msg := r.do(t, ts)
		assert.Equal(t, http.StatusForbidden, status, "Sec-Fetch-Site: %s", site)
		assert.Contains(t, msg, "Sec-Fetch-Site")
	}
	for _, site := range []string{"same-origin", "none", ""} {
		r := put
		r.fetchSite = site
		status, msg := r.do(t, ts)
		assert.Equal(t, http.StatusOK, status, "Sec-Fetch-Site %q: %s", site, msg)
	}
	status, _ := request{method: "GET", path: "/ui/", fetchSite: "cross-site"}.do(t, ts)
	assert.Equal(t, http.StatusOK, status, "a link from another site opens the console")
}

// TestAllowedHosts: a server reached by a name (behind a proxy, on a LAN)
// lists it; other names stay refused.
func TestAllowedHosts(t *testing.T) {
	ts := startAPIWith(t, httpapi.Config{Token: token, AllowedHosts: []string{"turnlog.internal"}})
	auth := "Bearer " + token
	status, _ := request{method: "GET", path: "/conversations", host: "turnlog.internal:8080", auth: auth}.do(t, ts)
	assert.Equal(t, http.StatusOK, status)
	status, _ = request{method: "GET", path: "/conversations", host: "TURNLOG.internal", auth: auth}.do(t, ts)
	assert.Equal(t, http.StatusOK, status, "host names compare without case")
	status, msg := request{method: "GET", path: "/conversations", host: "other.internal", auth: auth}.do(t, ts)
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, msg, "--allowed-hosts")

	_, err := httpapi.New(httpapi.Config{Log: &eventlog.Log{}, AllowedHosts: []string{"bad host"}})
	assert.Error(t, err, "a host with a space")
}
