package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/replay"
)

// chatUpstream is a strict stand-in for a Chat Completions server: it
// refuses a body that is not JSON, a tool message that answers no earlier
// tool call, a missing or wrong key; it answers a user message with a call
// of the tool "weather" and a tool result with text, streamed when asked.
type chatUpstream struct {
	*httptest.Server
	key string
	mu  sync.Mutex
	n   int
	// hold, when set, is waited on before answering (a slow upstream).
	hold chan struct{}
}

func newChatUpstream(t *testing.T, key string) *chatUpstream {
	u := &chatUpstream{key: key}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func openAIError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
}

func (u *chatUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-test","object":"model"}]}`)
		return
	}
	if r.URL.Path != "/v1/chat/completions" {
		openAIError(w, 404, "no route "+r.URL.Path)
		return
	}
	if u.key != "" && r.Header.Get("Authorization") != "Bearer "+u.key {
		// The key as it came, as some OpenAI-compatible servers answer
		// (OpenAI's own masks it).
		openAIError(w, 401, "Incorrect API key provided: "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		return
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "turnlog-") {
			openAIError(w, 400, "unexpected header "+k)
			return
		}
	}
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 {
		openAIError(w, 400, "the body is not a Chat Completions request")
		return
	}
	if u.hold != nil {
		<-u.hold
	}
	issued := map[string]bool{}
	for _, m := range body.Messages {
		for _, c := range m.ToolCalls {
			issued[c.ID] = true
		}
		if m.Role == "tool" && !issued[m.ToolCallID] {
			openAIError(w, 400, "tool message answers "+m.ToolCallID+", which no assistant message called")
			return
		}
	}
	u.mu.Lock()
	u.n++
	n := u.n
	u.mu.Unlock()
	last := body.Messages[len(body.Messages)-1]
	id := fmt.Sprintf("chatcmpl-%d", n)
	call := fmt.Sprintf("call_%d", n)
	if !body.Stream {
		msg := map[string]any{"role": "assistant", "content": "It is sunny.", "refusal": nil, "annotations": []any{}}
		finish := "stop"
		if last.Role == "user" {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": call, "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"city":"Paris"}`}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	if last.Role == "user" {
		chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0, "id": call, "type": "function", "function": map[string]any{"name": "weather", "arguments": ""}}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"city":`}}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `"Paris"}`}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
	} else {
		chunk(map[string]any{"role": "assistant", "content": "It is "}, nil)
		chunk(map[string]any{"content": "sunny."}, nil)
		chunk(map[string]any{}, "stop")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// wireLog is a transport between the gateway and the upstream that notes
// the SHA-256 of each request body the upstream received and of each
// response body it sent.
type wireLog struct {
	mu       sync.Mutex
	sent     []string // request bodies, as the upstream received them
	received []string // response bodies, as the upstream sent them
	headers  []http.Header
	next     http.RoundTripper
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (l *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	l.mu.Lock()
	i := len(l.sent)
	l.sent = append(l.sent, sum(body))
	l.received = append(l.received, "")
	l.headers = append(l.headers, r.Header.Clone())
	l.mu.Unlock()
	resp, err := l.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &hashBody{ReadCloser: resp.Body, done: func(s string) {
		l.mu.Lock()
		l.received[i] = s
		l.mu.Unlock()
	}}
	return resp, nil
}

type hashBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	done func(string)
}

func (h *hashBody) Read(p []byte) (int, error) {
	n, err := h.ReadCloser.Read(p)
	h.buf.Write(p[:n])
	if err == io.EOF {
		h.done(sum(h.buf.Bytes()))
	}
	return n, err
}

func (l *wireLog) snapshot() (sent, received []string, headers []http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent...), append([]string(nil), l.received...), append([]http.Header(nil), l.headers...)
}

// calls is how many calls the upstream answered.
func (u *chatUpstream) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

// newFixedUpstream answers every call with body (JSON), after reading the
// request: a provider whose answer a test does not vary.
func newFixedUpstream(t *testing.T, body string) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	return up
}

// chatAnswer is a Chat Completions response answering text, what the
// fixed stand-ins of the tests write.
func chatAnswer(text string) string {
	return `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` + strconv.Quote(text) + `},"finish_reason":"stop"}]}`
}

// checkRules runs replay --check's check on conv and returns the rules
// its findings name, in order (nil for none).
func checkRules(t *testing.T, l *eventlog.Log, conv string) []string {
	t.Helper()
	checked, err := replay.Check(t.Context(), l, conv)
	require.NoError(t, err)
	var rules []string
	for _, f := range checked.Findings {
		rules = append(rules, string(f.Rule))
	}
	return rules
}

// newNumberedResponses is a Responses API upstream whose n-th answer is
// response resp_<n>, "answer <n>".
func newNumberedResponses(t *testing.T) *httptest.Server {
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		i := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":"answer %d","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`, i, i, i)
	}))
	t.Cleanup(up.Close)
	return up
}

// heldUpstream is an upstream that answers a Chat Completions call
// ("late") only once release is closed: a call at the provider.
func heldUpstream(t *testing.T) (*httptest.Server, chan struct{}) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer("late"))
	}))
	t.Cleanup(up.Close)
	return up, release
}
