package mockllm

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Tap is a pass-through HTTP proxy in front of a server that keeps the
// body of every request exactly as it arrived on the connection, then
// forwards it unchanged: mock-llm answers by rules and cannot say which
// bytes it received, the tap can.
type Tap struct {
	// URL is the tap's root URL: use it where the server's would go.
	URL    string
	mu     sync.Mutex
	bodies [][]byte
}

// NewTap starts a tap in front of target (a root URL) for the test's
// duration.
func NewTap(t testing.TB, target string) *Tap {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	tap := &Tap{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1, // event streams pass event by event
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		tap.mu.Lock()
		tap.bodies = append(tap.bodies, body)
		tap.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tap.URL = srv.URL
	return tap
}

// Bodies returns the request bodies received so far, in order.
func (t *Tap) Bodies() [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([][]byte(nil), t.bodies...)
}
