package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeGatewayRefusesOtherSites: the gateway's routes on serve's
// listener skipped the HTTP API's browser checks. With --no-token and a
// managed provider key, any web page could spend that key (a cross-site
// POST of text/plain needs no preflight) and write conversations, and a
// DNS-rebinding page (a name of its own resolving to this machine) could
// read the answers too. They are refused as the API's routes are, before
// anything is forwarded; an SDK (no Origin, an IP or localhost) is not.
func TestServeGatewayRefusesOtherSites(t *testing.T) {
	var forwarded atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		forwarded.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	t.Setenv("TURNLOG_OPENAI_API_KEY", "sk-managed-by-turnlog")
	s := startServe(t, "--no-token", "--openai-upstream", up.URL+"/v1")
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	send := func(header map[string]string, host string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.httpURL+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, send(map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, ""), "a page of another site")
	assert.Equal(t, http.StatusForbidden, send(map[string]string{"Sec-Fetch-Site": "cross-site"}, ""), "a cross-site write without Origin")
	assert.Equal(t, http.StatusForbidden, send(nil, "attacker.example"), "a name that is not this server's (DNS rebinding)")
	assert.Zero(t, forwarded.Load(), "nothing refused reached the upstream")
	assert.Equal(t, http.StatusOK, send(nil, ""), "an SDK's call")
	assert.Equal(t, int64(1), forwarded.Load())
}
