package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/natsauth"
)

// TestWrongBaseURLIsSaidOnEachListener: an OpenAI SDK whose base URL lacks
// /v1 calls POST /chat/completions, which neither serve's HTTP API nor
// gateway's listener has; both answer it in OpenAI's error shape saying
// the base URL to use, without a token and with nothing forwarded, as
// they answer an Anthropic SDK's /v1/v1/messages in Anthropic's.
func TestWrongBaseURLIsSaidOnEachListener(t *testing.T) {
	var forwarded atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(up.Close)
	s := startServe(t, "--openai-upstream", up.URL+"/v1", "--anthropic-upstream", up.URL)

	gw, _, _ := startGatewayCmd(t, s, "--openai-upstream", up.URL+"/v1", "--anthropic-upstream", up.URL)

	for _, tc := range []struct {
		name, base, path string
		anthropic        bool
		want             string
	}{
		{name: "serve, openai sdk without /v1", base: s.httpURL, path: "/chat/completions", want: "must end in /v1: " + s.httpURL + "/v1"},
		{name: "serve, anthropic sdk with /v1", base: s.httpURL, path: "/v1/v1/messages", anthropic: true, want: "without /v1: " + s.httpURL},
		{name: "gateway, openai sdk without /v1", base: gw, path: "/responses", want: "must end in /v1: " + gw + "/v1"},
		{name: "gateway, anthropic sdk with /v1", base: gw, path: "/v1/v1/messages", anthropic: true, want: "without /v1: " + gw},
		// A path a provider may resolve to a recorded route is answered,
		// not redirected by the listener's mux to the route (a client
		// that follows a 307 posts again) nor forwarded unrecorded.
		{name: "serve, empty segment", base: s.httpURL, path: "/v1/chat//completions", want: "has an empty, '.' or '..' segment"},
		{name: "gateway, empty segment", base: gw, path: "/v1/chat//completions", want: "has an empty, '.' or '..' segment"},
		{name: "gateway, dot-dot segment", base: gw, path: "/v1/x/../chat/completions", want: "has an empty, '.' or '..' segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, tc.base+tc.path, strings.NewReader(`{"model":"m"}`))
			req.Header.Set("Content-Type", "application/json")
			if tc.anthropic {
				req.Header.Set("X-Api-Key", "sk-ant-provider")
			} else {
				req.Header.Set("Authorization", "Bearer sk-provider")
			}
			noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noRedirect.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), tc.want)
			if tc.anthropic {
				assert.Contains(t, string(body), `"type":"not_found_error"`)
			} else {
				assert.Contains(t, string(body), `"type":"invalid_request_error"`)
			}
		})
	}
	assert.Zero(t, forwarded.Load(), "nothing forwarded")

	// The HTTP API's own 404 is unchanged.
	tok, err := os.ReadFile(natsauth.TokenFile(natsauth.Dir(s.data)))
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodGet, s.httpURL+"/no-such-route", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, string(body), "docs/http-api.md")
}
