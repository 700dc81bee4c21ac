package gateway_test

// What the tests of the official Go SDKs (sdk_go_openai_test.go,
// sdk_go_anthropic_test.go) share: the SDK's side of the wire, and what a
// reasoning loop and a retried call must leave.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/providertest"
)

// sdkWire is, for the Go SDKs, what testdata/wire.js is for the npm ones:
// a middleware (both SDKs take the same function type) that notes the
// SHA-256 of every request body the SDK sends and of every response body
// it receives (streams included), the Turnlog-Conversation header and the
// status of each response. Every attempt passes through it, retries too.
type sdkWire struct {
	mu       sync.Mutex
	res      sdkResult
	statuses []int
}

func (w *sdkWire) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := next(req)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	i := len(w.res.Sent)
	w.res.Sent = append(w.res.Sent, sum(body))
	w.res.Received = append(w.res.Received, "")
	w.res.Conversations = append(w.res.Conversations, resp.Header.Get("Turnlog-Conversation"))
	w.statuses = append(w.statuses, resp.StatusCode)
	w.mu.Unlock()
	resp.Body = drainOnClose{&hashBody{ReadCloser: resp.Body, done: func(s string) {
		w.mu.Lock()
		w.res.Received[i] = s
		w.mu.Unlock()
	}}}
	return resp, nil
}

// drainOnClose reads what the SDK left unread of a body when it closes it
// (a stream's "[DONE]" ends its reading), so that the hash is of every
// byte that reached the client.
type drainOnClose struct{ *hashBody }

func (d drainOnClose) Close() error {
	_, _ = io.Copy(io.Discard, d.hashBody)
	return d.hashBody.Close()
}

// result is what the SDK sent and received so far, with texts.
func (w *sdkWire) result(texts ...string) sdkResult {
	w.mu.Lock()
	defer w.mu.Unlock()
	res := w.res
	res.Sent = append([]string(nil), res.Sent...)
	res.Received = append([]string(nil), res.Received...)
	res.Conversations = append([]string(nil), res.Conversations...)
	res.Texts = texts
	return res
}

// threadings is the "threading" of each call of conv, in order.
func threadings(t *testing.T, r *rig, conv string) []string {
	t.Helper()
	started, _, _ := inferences(t, r, conv)
	var out []string
	for _, p := range started {
		out = append(out, p.Gateway["threading"])
	}
	return out
}

// strictUpstream is either of providertest's rule-checking servers.
type strictUpstream interface {
	Requests() []providertest.Request
	Violations() []string
}

// sentBackAsIssued asserts what a Go SDK's two-call tool loop with
// reasoning leaves: the strict upstream found nothing wrong, the opaque
// part of the first call's reasoning (field: Responses' encrypted_content,
// Messages' signature; issued: the SDK's, per call) reached the upstream
// on the second call as issued, with key each time; checkCall's byte for
// byte, one conversation and replay --verify; threading "new" then
// "inferred"; and each opaque part recorded as issued.
func sentBackAsIssued(t *testing.T, r *rig, w *sdkWire, up strictUpstream, text, field string, issued []string, key string) {
	t.Helper()
	assert.Empty(t, up.Violations(), "the strict upstream found nothing wrong")
	require.Len(t, issued, 2)
	reqs := up.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, string(reqs[1].Raw), `"`+field+`":"`+issued[0]+`"`, "the first call's reasoning went back as issued")
	assert.Equal(t, 1, reqs[1].Reasoning)
	for _, q := range reqs {
		assert.Equal(t, key, q.APIKey)
	}
	evs := checkCall(t, r, w.result(text), 2)
	var recorded []string
	for _, e := range evs {
		if p, ok := e.Payload.(events.ReasoningAppended); ok {
			recorded = append(recorded, p.Encrypted)
		}
	}
	assert.Equal(t, issued, recorded, "the opaque part is recorded as the provider issued it")
	assert.Equal(t, []string{"new", "inferred"}, threadings(t, r, w.result().Conversations[0]))
}

// failingFirst puts in front of next a stand-in that answers the attempts
// numbered in fail (1 is the first request) with status and body, a
// retry-after-ms of 10 and a Retry-After of 0, so that an SDK retries at
// once; every other request goes to next.
func failingFirst(t *testing.T, next http.Handler, status int, body string, fail ...int) *httptest.Server {
	var mu sync.Mutex
	n := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		failed := false
		for _, f := range fail {
			failed = failed || f == n
		}
		mu.Unlock()
		if !failed {
			next.ServeHTTP(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After-Ms", "10")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	return up
}

// retried asserts what a two-call tool loop with retried attempts must
// leave (statuses: of each attempt, as the SDK got them): the SDK's
// attempts went upstream byte for byte, each failed attempt was recorded
// as a failed call (its error naming failure) and every attempt is a call
// of the first's conversation ("new", then "inferred"; the retry of a
// failed first call too, which said it is a retry), the user's message and
// the tool's result in it once, and replay --verify passes.
func retried(t *testing.T, r *rig, w *sdkWire, statuses []int, failure string) {
	t.Helper()
	res := w.result()
	assert.Equal(t, statuses, w.statuses, "the SDK retried each failed attempt")
	sent, received, _ := r.wire.snapshot()
	assert.Equal(t, res.Sent, sent, "request bodies byte for byte, retries included")
	assert.Equal(t, res.Received, received, "response bodies byte for byte, errors included")
	conv := res.Conversations[0]
	for i, c := range res.Conversations {
		assert.Equal(t, conv, c, "attempt %d (status %d) is of the first attempt's conversation", i+1, w.statuses[i])
	}
	started, finished, failed := inferences(t, r, conv)
	assert.Len(t, started, len(statuses), "every attempt is a call of the conversation")
	assert.Len(t, failed, len(statuses)-2, "each failed attempt is recorded as a failed call")
	assert.Equal(t, 2, finished)
	for _, f := range failed {
		assert.Contains(t, f, failure)
	}
	assert.Equal(t, []string{"Weather in Paris?"}, userTexts(t, r, conv), "the user's message once")
	want := []string{"new"}
	for range len(statuses) - 1 {
		want = append(want, "inferred")
	}
	assert.Equal(t, want, threadings(t, r, conv), "each attempt after the first continues the conversation")
	results := map[string]int{}
	for _, e := range conversationEvents(t, r.log, conv) {
		if p, ok := e.Payload.(events.ToolResult); ok {
			results[p.CallID]++
		}
	}
	assert.Len(t, results, 1, "the second call's tool result, once")
	for id, n := range results {
		assert.Equal(t, 1, n, "the tool result of %s once", id)
	}
	verify(t, r.log, conv)
}

// retriedCalls runs, as subtests, a two-call tool loop whose upstream
// answers status to the first attempt of its second call ("a later
// call") or of its first: run builds the rig in front of failingFirst
// (failing attempt fail) and runs the loop; then retried checks what it
// left.
func retriedCalls(t *testing.T, status int, run func(t *testing.T, fail int) (*rig, *sdkWire)) {
	for _, tc := range []struct {
		name string
		fail int
	}{{"a later call", 2}, {"the first call", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			r, w := run(t, tc.fail)
			statuses := slices.Insert([]int{200, 200}, tc.fail-1, status)
			retried(t, r, w, statuses, fmt.Sprintf("upstream answered %d", status))
		})
	}
}
