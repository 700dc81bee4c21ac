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
		w.Header().Set("X-Echo", "key="+key)
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

// TestProviderKeysNeverReachTheAppNorTheRecord: with a managed key, an
// app holds turnlog's token only, and the provider key is turnlog's. An
// upstream that echoed the key in its answer handed it to the app, as it
// came; and an echo in a model's answer (a 200) was stored in the log, the
// managed key or, in pass-through, the app's own (found by the security
// re-probe), as was one in a response header. The keys a call sent
// upstream are now overwritten, byte for byte, in the answer's headers
// and body, before it is recorded: the app and the record get the same
// bytes, the answer keeps its length, and the rest of it is unchanged.
func TestProviderKeysNeverReachTheAppNorTheRecord(t *testing.T) {
	const managedKey = "sk-provider-secret"
	const appKey = "sk-the-apps-own-key"
	const streamed = `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	passThrough := map[string]string{"Turnlog-Token": token, "Authorization": "Bearer " + appKey}
	cases := []struct {
		name, path, body, contentType string
		status                        int
		before, after                 string
		header                        map[string]string
		key                           string
		recorded                      bool
	}{
		{name: "a JSON error", path: "/v1/chat/completions", body: fmt.Sprintf(chatBody, "json"), contentType: "application/json", status: 401,
			before: `{"error":{"message":"Incorrect API key provided: `, after: `","type":"invalid_request_error","code":"invalid_api_key"}}`, recorded: true},
		{name: "an error event in a stream", path: "/v1/chat/completions", body: streamed, contentType: "text/event-stream", status: 200,
			before: `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}` + "\n\n" +
				`data: {"error":{"type":"invalid_request_error","message":"Incorrect API key provided: `, after: `"}}` + "\n\n", recorded: true},
		{name: "a model's answer", path: "/v1/chat/completions", body: fmt.Sprintf(chatBody, "answer"), contentType: "application/json", status: 200,
			before: `{"id":"c2","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"your key is `,
			after:  `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`, recorded: true},
		{name: "a path forwarded unrecorded", path: "/v1/models", body: "", contentType: "application/json", status: 401,
			before: `{"error":{"message":"Incorrect API key provided: `, after: `"}}`},
		{name: "pass-through: a model's answer holding the app's own key", path: "/v1/chat/completions", body: fmt.Sprintf(chatBody, "pass"), contentType: "application/json", status: 200,
			before: `{"id":"c3","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"your key is `,
			after:  `"},"finish_reason":"stop"}]}`, header: passThrough, key: appKey, recorded: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, bodies := echoingUpstream(t, tc.status, tc.contentType, tc.before, tc.after)
			r := newRig(t, up.URL, "", managed)
			h, key := tc.header, tc.key
			if h == nil {
				h, key = map[string]string{"Authorization": "Bearer " + token}, managedKey
			}
			resp, got := post(t, r.gw.URL+tc.path, h, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, "%s", got)
			sent := bodies()
			require.Len(t, sent, 1)
			want := sent[0]
			require.Contains(t, want, key, "the stand-in upstream echoed the key")
			assert.NotContains(t, string(got), key, "the key reached the app")
			assert.NotContains(t, string(got), key[:len(key)/2+1], "part of the key reached the app")
			assert.NotContains(t, resp.Header.Get("X-Echo"), key, "the key reached the app in a header")
			require.Len(t, got, len(want), "the answer keeps its length (its Content-Length holds)")
			at := strings.Index(want, key)
			assert.Equal(t, want[:at], string(got[:at]), "the bytes before the key are unchanged")
			assert.Equal(t, want[at+len(key):], string(got[at+len(key):]), "the bytes after the key are unchanged")
			assert.False(t, bytes.Contains(got[at:at+len(key)], []byte("sk-")), "what stands for the key: %q", got[at:at+len(key)])
			if tc.recorded {
				conv := resp.Header.Get("Turnlog-Conversation")
				require.NotEmpty(t, conv)
				stored := string(storedBytes(t, r))
				assert.NotContains(t, stored, key, "the key is in the log's stored bytes")
				assert.NotContains(t, stored, key[:len(key)/2+1], "part of the key is in the log's stored bytes")
			}
		})
	}
}
