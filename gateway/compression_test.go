package gateway_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
)

// TestTheProviderAnswersUncompressed: the gateway drops the client's
// Accept-Encoding so that the provider answers as it writes, but Go's
// transport then asked for gzip itself and inflated the answer on the
// way: the provider sent other bytes than the app received (and a
// stream's events came through a gzip reader). With the gateway's own
// transport (Config.Transport unset) the provider is asked for no
// encoding, as a provider that compresses when asked shows.
func TestTheProviderAnswersUncompressed(t *testing.T) {
	var (
		mu    sync.Mutex
		asked []string
	)
	answer := chatAnswer("plain")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, answer)
			zw.Close()
			return
		}
		io.WriteString(w, answer)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.Transport = nil })

	for _, enc := range []string{"", "gzip, deflate, br"} {
		h := map[string]string{"Authorization": "Bearer sk-app", "Turnlog-Token": token}
		if enc != "" {
			h["Accept-Encoding"] = enc
		}
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		assert.Equal(t, answer, string(body), "the app gets the provider's bytes")
		assert.Empty(t, resp.Header.Get("Content-Encoding"))
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"", ""}, asked, "the provider was asked for no encoding, so what it sends is what the app gets")
}
