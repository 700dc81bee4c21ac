package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoingUpstream answers every call with status and a body that echoes
// the key the call sent upstream, the way some OpenAI-compatible servers'
// errors do ("Incorrect API key provided: sk-..."). The body is written
// in two flushed pieces, cut inside the key, so that a gateway reading it
// as it comes sees the key in two reads. It keeps each body it wrote.
func echoingUpstream(t *testing.T, status int, contentType string, before, after string) (*httptest.Server, func() []string) {
	t.Helper()
	var bodies []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		body := before + key + after
		bodies = append(bodies, body)
		w.Header().Set("Content-Type", contentType)
		if !strings.HasPrefix(contentType, "text/event-stream") {
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		}
		w.WriteHeader(status)
		cut := len(before) + len(key)/2
		io.WriteString(w, body[:cut])
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, body[cut:])
	}))
	t.Cleanup(up.Close)
	return up, func() []string { return bodies }
}

// TestManagedKeyNeverReachesTheApp: with a managed key, an app holds only
// turnlog's token, and the provider key is turnlog's. An upstream that
// echoed the key in its answer handed it to the app, as it came (the
// record already had it redacted). The key is now overwritten, byte for
// byte, in what the app receives: the rest of the answer, its length and
// its streaming are unchanged. A pass-through call's own key, which the
// app sent, comes back as the upstream wrote it.
func TestManagedKeyNeverReachesTheApp(t *testing.T) {
	const key = "sk-provider-secret"
	const streamed = `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name, path, body, contentType string
		status                        int
		before, after                 string
		header                        map[string]string
		passThrough                   bool
	}{
		{name: "a JSON error", path: "/v1/chat/completions", body: fmt.Sprintf(chatBody, "json"), contentType: "application/json", status: 401,
			before: `{"error":{"message":"Incorrect API key provided: `, after: `","type":"invalid_request_error","code":"invalid_api_key"}}`},
		{name: "an error event in a stream", path: "/v1/chat/completions", body: streamed, contentType: "text/event-stream", status: 200,
			before: `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}` + "\n\n" +
				`data: {"error":{"type":"invalid_request_error","message":"Incorrect API key provided: `, after: `"}}` + "\n\n"},
		{name: "a path forwarded unrecorded", path: "/v1/models", body: "", contentType: "application/json", status: 401,
			before: `{"error":{"message":"Incorrect API key provided: `, after: `"}}`},
		{name: "pass-through: the app's own key", path: "/v1/chat/completions", body: fmt.Sprintf(chatBody, "pass"), contentType: "application/json", status: 401,
			before: `{"error":{"message":"Incorrect API key provided: `, after: `"}}`, passThrough: true,
			header: map[string]string{"Turnlog-Token": token, "Authorization": "Bearer sk-the-apps-own-key"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, bodies := echoingUpstream(t, tc.status, tc.contentType, tc.before, tc.after)
			r := newRig(t, up.URL, "", managed)
			h := tc.header
			if h == nil {
				h = map[string]string{"Authorization": "Bearer " + token}
			}
			resp, got := post(t, r.gw.URL+tc.path, h, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s", got)
			sent := bodies()
			require.Len(t, sent, 1)
			want := sent[0]
			if tc.passThrough {
				assert.Equal(t, want, string(got), "a pass-through call's answer reaches the app byte for byte")
				return
			}
			require.Contains(t, want, key, "the stand-in upstream echoed the managed key")
			assert.NotContains(t, string(got), key, "the managed key reached the app")
			assert.NotContains(t, string(got), key[:len(key)/2+1], "part of the managed key reached the app")
			require.Len(t, got, len(want), "the answer keeps its length (its Content-Length holds)")
			at := strings.Index(want, key)
			assert.Equal(t, want[:at], string(got[:at]), "the bytes before the key are unchanged")
			assert.Equal(t, want[at+len(key):], string(got[at+len(key):]), "the bytes after the key are unchanged")
			assert.False(t, bytes.Contains(got[at:at+len(key)], []byte("sk-")), "what stands for the key: %q", got[at:at+len(key)])
		})
	}
}
