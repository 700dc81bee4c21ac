// Package providertest runs fake model servers for tests: an OpenAI
// Responses API server and an Anthropic Messages API server on 127.0.0.1,
// each checking every request against the API's documented rules and
// answering with the API's documented response shapes, blocking or as
// server-sent events.
//
// They check what turnlog's engines must get right and a real server
// rejects: a reasoning item immediately followed by its message or
// function call, the two paired by the follower's item ID, encrypted
// reasoning and thinking signatures sent back byte for byte as issued (the
// server remembers what it issued), thinking blocks returned in the
// assistant turn they came from, one system prompt, tool calls and results
// matched by call ID, stateless Responses requests. A request that breaks a
// rule is answered with the API's error status and shape, and the broken
// rule is kept in Violations, so a test can assert that none occurred.
//
// Where an API's rule was relaxed on one endpoint but not on others, the
// fakes keep the strict rule: Anthropic's endpoint now accepts an
// assistant message first and combines consecutive messages of one role,
// but Amazon Bedrock and the Messages API of 2024 reject both ("messages:
// first message must use the "user" role"), so the Messages fake does too.
//
// No package on npm or the Go module proxy reachable here implements either
// API by itself (the gateways that translate them need a real upstream
// model), so these fakes are the tests' rule-checking servers. A second
// implementation checks the engines' blocking calls all the same:
// @dwmkerr/mock-llm (internal/mockllm), which matches rules on any path by
// JMESPath over the request and answers any JSON template, stands for
// each API in engine/responses' and engine/anthropic's TestMockLLM, as it
// does for Chat Completions in engine/openai. Not for streaming: mock-llm
// streams Chat Completions chunks whatever the path.
package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Reply is what a fake model answers to one request.
type Reply struct {
	// Reasoning is the reasoning: the summary parts of one reasoning item
	// (Responses), or the texts of thinking blocks (Anthropic, when the
	// request enables thinking). Nil: no reasoning.
	Reasoning []string
	// Redacted adds a redacted_thinking block after the thinking blocks
	// (Anthropic only).
	Redacted bool
	// Text is the answer's text ("" with Calls: none).
	Text string
	// Calls are tool calls, in order.
	Calls []Call
}

// Call is one tool call of a Reply.
type Call struct {
	Name string
	// Arguments is a JSON object ("" for {}).
	Arguments string
}

// Request is what a fake server received, reduced to what a reply
// function needs to choose its answer.
type Request struct {
	// Body is the request's JSON object.
	Body map[string]json.RawMessage
	// System is the system prompt texts, in order (Responses: system and
	// developer messages and instructions; Anthropic: the system field).
	System []string
	// LastUser is the text of the last user message, or "" when the input
	// ends with tool results.
	LastUser string
	// ToolResults are the outputs of the tool results at the end of the
	// input, in order.
	ToolResults []string
	// Reasoning counts the reasoning items (Responses) or thinking and
	// redacted_thinking blocks (Anthropic) sent back.
	Reasoning int
	// Stream is whether the request asked for server-sent events.
	Stream bool
	// APIKey is the key the request carried where the API wants it:
	// "Authorization: Bearer <key>" (Responses), "x-api-key" (Anthropic).
	APIKey string
	// Raw is the body exactly as the server read it from the connection,
	// so a test can compare what a client says it sent with what arrived.
	Raw []byte
}

// recorder is what both servers share: the requests, the violations and
// counters for the IDs they issue.
type recorder struct {
	mu         sync.Mutex
	requests   []Request
	violations []string
	n          int
}

func (r *recorder) next() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return r.n
}

func (r *recorder) record(req Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
}

func (r *recorder) violate(v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, v)
}

// Requests returns the requests received so far that passed the checks.
func (r *recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Violations returns the rules requests broke so far, one line each.
func (r *recorder) Violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.violations...)
}

// sse writes server-sent events, one "event:" and one "data:" line each,
// flushing after each event as a real server does.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) event(name string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(err) // the fake's own data always encodes
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, raw)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// chunks cuts s into two pieces (or one, when short), so that streams
// carry deltas that must be joined.
func chunks(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	h := len(s) / 2
	for h > 0 && s[h]&0xC0 == 0x80 {
		h--
	}
	return []string{s[:h], s[h:]}
}

// object decodes raw as a JSON object, or nil.
func object(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// str decodes raw as a JSON string, or "".
func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// argsObject is a call's arguments as a JSON object.
func argsObject(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

// sameJSON reports whether two JSON texts have the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return bytes.Equal(ra, rb)
}
