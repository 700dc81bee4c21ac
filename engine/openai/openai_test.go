package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/openai"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

const testKey = "sk-test-0123456789abcdef"

// fakeServer is a Chat Completions endpoint on 127.0.0.1 that records what
// the engine sent and answers with whatever respond writes.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
	respond  func(w http.ResponseWriter, req map[string]json.RawMessage)
}

type recorded struct {
	header http.Header
	body   map[string]json.RawMessage
}

func newFakeServer(t *testing.T, respond func(w http.ResponseWriter, req map[string]json.RawMessage)) *fakeServer {
	t.Helper()
	s := &fakeServer{respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"no route `+r.Method+" "+r.URL.Path+`"}}`, http.StatusNotFound)
			return
		}
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, `{"error":{"message":"request is not JSON"}}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, recorded{header: r.Header.Clone(), body: body})
		s.mu.Unlock()
		s.respond(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *fakeServer) recorded(t *testing.T) []recorded {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.requests...)
}

// writeSSE streams chunks as server-sent events, then [DONE].
func writeSSE(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

func isStreaming(req map[string]json.RawMessage) bool {
	return string(req["stream"]) == "true"
}

func newEngine(t *testing.T, srv *fakeServer, stream bool) *openai.Engine {
	t.Helper()
	e, err := openai.New(openai.Config{
		BaseURL: srv.URL + "/v1",
		APIKey:  testKey,
		Model:   "default-model",
		Stream:  stream,
	})
	require.NoError(t, err)
	return e
}

// conversation has every block kind, in the shapes that need merging.
func conversation() *projector.Turn {
	return &projector.Turn{Conversation: "c1", Blocks: []events.Block{
		{ID: "b1", Kind: events.KindSystem, Text: "Be brief.", Trust: events.Trusted},
		{ID: "b2", Kind: events.KindOther, Text: "Project notes.", Trust: events.Trusted},
		{ID: "b3", Kind: events.KindUser, Text: "hi"},
		{ID: "b4", Kind: events.KindOther, Text: "The user greeted us.", Trust: events.Trusted},
		{ID: "b5", Kind: events.KindUser, Text: "Weather in Paris and Rome?"},
		{ID: "b6", Kind: events.KindReasoning, Text: "Two cities: two calls."},
		{ID: "b7", Kind: events.KindLLMText, Text: "Let me check."},
		{ID: "b8", Kind: events.KindToolCall, CallID: "c1", ToolName: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "b9", Kind: events.KindReasoning, Text: "And Rome."},
		{ID: "b10", Kind: events.KindToolCall, CallID: "c2", ToolName: "get_weather"},
		{ID: "b11", Kind: events.KindToolResult, CallID: "c1", Text: "18C"},
		{ID: "b12", Kind: events.KindToolResult, CallID: "c2", Text: "timeout", IsError: true},
	}}
}

const wantMessages = `[
	{"role": "system", "content": "Be brief."},
	{"role": "system", "content": "Project notes."},
	{"role": "user", "content": "hi"},
	{"role": "assistant", "content": "[summary] The user greeted us."},
	{"role": "user", "content": "Weather in Paris and Rome?"},
	{"role": "assistant", "content": "Let me check.", "tool_calls": [
		{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
		{"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
	]},
	{"role": "tool", "tool_call_id": "c1", "content": "18C"},
	{"role": "tool", "tool_call_id": "c2", "content": "error: timeout"}
]`

var testTools = []engine.ToolSpec{
	{Name: "get_weather", Description: "Current weather of a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "now"},
}

const wantTools = `[
	{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city.",
		"parameters": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
	{"type": "function", "function": {"name": "now", "parameters": {"type":"object","properties":{}}}}
]`

// The answer both modes give: reasoning, text, two tool calls, usage.
const completionJSON = `{
	"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "override-model",
	"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
		"role": "assistant",
		"reasoning_content": "I should call the tools.",
		"content": "Checking both.",
		"tool_calls": [
			{"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
			{"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"Europe/Rome\"}"}}
		]}}],
	"usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
}`

// The same answer streamed: reasoning and text in pieces, the two tool
// calls' arguments in fragments that interleave, usage in a last chunk
// without choices, usage null before it as OpenAI sends it.
var completionChunks = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"I should "},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"call the tools."},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Checking "},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"both."},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\""}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\"Paris\"}"}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"Europe/Rome\"}"}}]},"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`,
}

var wantBlocks = []events.Block{
	{Kind: events.KindReasoning, Text: "I should call the tools."},
	{Kind: events.KindLLMText, Text: "Checking both."},
	{Kind: events.KindToolCall, CallID: "call_a", ToolName: "get_weather", Arguments: `{"city":"Paris"}`},
	{Kind: events.KindToolCall, CallID: "call_b", ToolName: "get_time", Arguments: `{"tz":"Europe/Rome"}`},
}

func TestInferRequestAndAnswer(t *testing.T) {
	cases := []struct {
		name       string
		stream     bool
		wantDeltas []engine.Delta
	}{
		{
			name:   "blocking",
			stream: false,
			// Everything arrives at once, and is passed on once.
			wantDeltas: []engine.Delta{
				{Kind: events.KindReasoning, Text: "I should call the tools."},
				{Kind: events.KindLLMText, Text: "Checking both."},
			},
		},
		{
			name:   "streaming",
			stream: true,
			wantDeltas: []engine.Delta{
				{Kind: events.KindReasoning, Text: "I should "},
				{Kind: events.KindReasoning, Text: "call the tools."},
				{Kind: events.KindLLMText, Text: "Checking "},
				{Kind: events.KindLLMText, Text: "both."},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, req map[string]json.RawMessage) {
				if isStreaming(req) {
					writeSSE(w, completionChunks...)
					return
				}
				writeJSON(w, http.StatusOK, completionJSON)
			})
			e := newEngine(t, srv, tc.stream)
			turn := conversation()
			before := turn.Clone()

			var deltas []engine.Delta
			out, err := e.Infer(context.Background(), engine.Input{Turn: turn, Model: "override-model", Tools: testTools},
				func(d engine.Delta) { deltas = append(deltas, d) })
			require.NoError(t, err)

			reqs := srv.recorded(t)
			require.Len(t, reqs, 1, "one request: the SDK's own retries are off")
			req := reqs[0]
			assert.JSONEq(t, wantMessages, string(req.body["messages"]), "messages in order, merged")
			assert.JSONEq(t, wantTools, string(req.body["tools"]))
			assert.Equal(t, `"override-model"`, string(req.body["model"]), "Input.Model overrides Config.Model")
			assert.Equal(t, "Bearer "+testKey, req.header.Get("Authorization"))
			if tc.stream {
				assert.Equal(t, "true", string(req.body["stream"]))
				assert.JSONEq(t, `{"include_usage": true}`, string(req.body["stream_options"]))
			} else {
				assert.NotContains(t, req.body, "stream_options")
				assert.NotEqual(t, "true", string(req.body["stream"]))
			}

			assert.Equal(t, wantBlocks, out.Blocks)
			assert.Equal(t, engine.Usage{PromptTokens: 11, CompletionTokens: 7}, out.Usage)
			assert.Equal(t, "tool_calls", out.StopReason)
			assert.Equal(t, tc.wantDeltas, deltas)
			assert.Equal(t, before, turn, "Infer must not modify the Turn")
		})
	}
}

func TestInferConcurrent(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, _ map[string]json.RawMessage) {
		writeSSE(w, completionChunks...)
	})
	e := newEngine(t, srv, true)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := e.Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
			if assert.NoError(t, err) {
				assert.Equal(t, wantBlocks, out.Blocks)
			}
		}()
	}
	wg.Wait()
	assert.Len(t, srv.recorded(t), 8)
}

func TestInferDefaultModelAndNoKey(t *testing.T) {
	// The process's OpenAI settings must not reach a server configured
	// explicitly: New reads no environment.
	t.Setenv("OPENAI_API_KEY", "sk-from-env-must-not-leak")
	t.Setenv("OPENAI_ORG_ID", "org-must-not-leak")
	srv := newFakeServer(t, func(w http.ResponseWriter, req map[string]json.RawMessage) {
		writeJSON(w, http.StatusOK, `{"id":"x","object":"chat.completion","created":1,"model":"m",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
	})
	e, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "default-model"})
	require.NoError(t, err)

	out, err := e.Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
	require.NoError(t, err)
	assert.Equal(t, []events.Block{{Kind: events.KindLLMText, Text: "ok"}}, out.Blocks)
	assert.Equal(t, "stop", out.StopReason)

	req := srv.recorded(t)[0]
	assert.Equal(t, `"default-model"`, string(req.body["model"]))
	assert.Empty(t, req.header.Get("Authorization"))
	assert.Empty(t, req.header.Get("OpenAI-Organization"))
	assert.NotContains(t, req.body, "tools", "no tools declared, none sent")
}

func TestInferNoModel(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, _ map[string]json.RawMessage) {
		t.Error("no request may be sent without a model")
	})
	e, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1"})
	require.NoError(t, err)
	_, err = e.Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
	require.ErrorIs(t, err, openai.ErrNoModel)
	assert.Contains(t, err.Error(), "OPENAI_MODEL")
	assert.NotErrorIs(t, err, engine.ErrTransient)
}

func TestReasoningFields(t *testing.T) {
	cases := []struct {
		name    string
		message string // extra fields of the message
		delta   string // the same, as one delta
		want    string
	}{
		{name: "reasoning_content (DeepSeek, vLLM, llama.cpp)", message: `"reasoning_content":"R1"`, want: "R1"},
		{name: "reasoning (Ollama, OpenRouter)", message: `"reasoning":"R2"`, want: "R2"},
		{name: "both carry the same text, taken once", message: `"reasoning_content":"R3","reasoning":"R3"`, want: "R3"},
		{name: "null", message: `"reasoning_content":null`, want: ""},
		{name: "none", message: `"refusal":null`, want: ""},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				srv := newFakeServer(t, func(w http.ResponseWriter, req map[string]json.RawMessage) {
					if isStreaming(req) {
						writeSSE(w,
							`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant",`+tc.message+`},"finish_reason":null}]}`,
							`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"answer"},"finish_reason":"stop"}]}`)
						return
					}
					writeJSON(w, http.StatusOK, `{"id":"x","object":"chat.completion","created":1,"model":"m",
						"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"answer",`+tc.message+`}}]}`)
				})
				out, err := newEngine(t, srv, stream).Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
				require.NoError(t, err)
				want := []events.Block{{Kind: events.KindLLMText, Text: "answer"}}
				if tc.want != "" {
					want = append([]events.Block{{Kind: events.KindReasoning, Text: tc.want}}, want...)
				}
				assert.Equal(t, want, out.Blocks)
			})
		}
	}
}

func TestToolCallWithoutID(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, _ map[string]json.RawMessage) {
		writeJSON(w, http.StatusOK, `{"id":"x","object":"chat.completion","created":1,"model":"m",
			"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
			"tool_calls":[{"type":"function","function":{"name":"now","arguments":""}}]}}]}`)
	})
	out, err := newEngine(t, srv, false).Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
	require.NoError(t, err)
	require.Len(t, out.Blocks, 1)
	b := out.Blocks[0]
	assert.Equal(t, events.KindToolCall, b.Kind)
	assert.Equal(t, "now", b.ToolName)
	assert.True(t, strings.HasPrefix(b.CallID, "call_") && len(b.CallID) > len("call_"), "got call ID %q, want a generated call_ ID", b.CallID)
}

func TestInferErrors(t *testing.T) {
	cases := []struct {
		name          string
		status        int
		body          string
		wantTransient bool
		wantText      []string // all must appear in the error
	}{
		{
			name: "429 rate limit", status: 429,
			body:          `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`,
			wantTransient: true, wantText: []string{"HTTP 429", "Rate limit reached for requests", "rate_limit_exceeded"},
		},
		{
			name: "500 plain text", status: 500, body: "upstream exploded",
			wantTransient: true, wantText: []string{"HTTP 500", "upstream exploded"},
		},
		{
			name: "503 llama.cpp style", status: 503, body: `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`,
			wantTransient: true, wantText: []string{"HTTP 503", "Loading model"},
		},
		{name: "408", status: 408, body: `{}`, wantTransient: true, wantText: []string{"HTTP 408"}},
		{name: "409", status: 409, body: `{"error":"conflict"}`, wantTransient: true, wantText: []string{"HTTP 409", "conflict"}},
		{
			name: "400 OpenAI style", status: 400,
			body:          `{"error":{"message":"Invalid value for 'messages[2].role'.","type":"invalid_request_error","param":"messages","code":null}}`,
			wantTransient: false, wantText: []string{"HTTP 400", "Invalid value for 'messages[2].role'.", "invalid_request_error"},
		},
		{
			name: "400 vLLM style", status: 400,
			body:          `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`,
			wantTransient: false, wantText: []string{"HTTP 400", "maximum context length is 4096 tokens"},
		},
		{
			name: "401 echoing the key", status: 401,
			body:          `{"error":{"message":"Incorrect API key provided: ` + testKey + `.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			wantTransient: false, wantText: []string{"HTTP 401", "Incorrect API key provided: [redacted]", "OPENAI_API_KEY"},
		},
		{
			name: "404 model not found (Ollama)", status: 404, body: `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error"}}`,
			wantTransient: false, wantText: []string{"HTTP 404", `model "llama9" not found`, "OPENAI_BASE_URL"},
		},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				srv := newFakeServer(t, func(w http.ResponseWriter, _ map[string]json.RawMessage) {
					writeJSON(w, tc.status, tc.body)
				})
				_, err := newEngine(t, srv, stream).Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
				require.Error(t, err)
				assert.Equal(t, tc.wantTransient, errors.Is(err, engine.ErrTransient), "transient: %v", err)
				for _, s := range tc.wantText {
					assert.Contains(t, err.Error(), s)
				}
				assert.NotContains(t, err.Error(), testKey)
				assert.Contains(t, err.Error(), "chat completion with model")
				var apiErr *openai.APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, tc.status, apiErr.StatusCode)
				assert.Len(t, srv.recorded(t), 1, "the SDK must not retry by itself")
			})
		}
	}
}

func TestStreamFailures(t *testing.T) {
	const head = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}`
	cases := []struct {
		name          string
		respond       func(w http.ResponseWriter)
		wantTransient bool
		wantText      string
	}{
		{
			name: "error event: server error",
			respond: func(w http.ResponseWriter) {
				writeSSE(w, head, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`)
			},
			wantTransient: true, wantText: "error event in stream: The server had an error",
		},
		{
			name: "error event: invalid request",
			respond: func(w http.ResponseWriter) {
				writeSSE(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
			},
			wantTransient: false, wantText: "Incorrect API key provided.",
		},
		{
			name: "cut before finish_reason",
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s\n\n", head)
			},
			wantTransient: true, wantText: "without a finish_reason",
		},
		{
			name: "server ignores stream:true",
			respond: func(w http.ResponseWriter) {
				writeJSON(w, http.StatusOK, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}`)
			},
			wantTransient: false, wantText: "set Config.Stream to false",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, _ map[string]json.RawMessage) { tc.respond(w) })
			_, err := newEngine(t, srv, true).Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
			require.Error(t, err)
			assert.Equal(t, tc.wantTransient, errors.Is(err, engine.ErrTransient), "transient: %v", err)
			assert.Contains(t, err.Error(), tc.wantText)
		})
	}
}

func TestNetworkErrors(t *testing.T) {
	t.Run("connection refused is transient", func(t *testing.T) {
		srv := newFakeServer(t, func(http.ResponseWriter, map[string]json.RawMessage) {})
		e := newEngine(t, srv, false)
		srv.Close()
		_, err := e.Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
		require.Error(t, err)
		assert.ErrorIs(t, err, engine.ErrTransient)
		assert.NotContains(t, err.Error(), testKey)
	})
	t.Run("client timeout is transient", func(t *testing.T) {
		release := make(chan struct{})
		srv := newFakeServer(t, func(http.ResponseWriter, map[string]json.RawMessage) { <-release })
		defer close(release)
		e, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}})
		require.NoError(t, err)
		_, err = e.Infer(context.Background(), engine.Input{Turn: conversation()}, nil)
		require.Error(t, err)
		assert.ErrorIs(t, err, engine.ErrTransient)
	})
	t.Run("cancelled context is not transient", func(t *testing.T) {
		release := make(chan struct{})
		srv := newFakeServer(t, func(http.ResponseWriter, map[string]json.RawMessage) { <-release })
		defer close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := newEngine(t, srv, true).Infer(ctx, engine.Input{Turn: conversation()}, nil)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, engine.ErrTransient, "the caller gave up; a retry would too")
	})
}

func TestInvalidInput(t *testing.T) {
	srv := newFakeServer(t, func(http.ResponseWriter, map[string]json.RawMessage) {
		t.Error("invalid input must be refused before any request")
	})
	e := newEngine(t, srv, false)
	cases := []struct {
		name     string
		in       engine.Input
		wantText string
	}{
		{name: "no turn", in: engine.Input{}, wantText: "no Turn"},
		{
			name:     "only reasoning",
			in:       engine.Input{Turn: &projector.Turn{Blocks: []events.Block{{ID: "r", Kind: events.KindReasoning, Text: "hm"}}}},
			wantText: "no block that becomes a message",
		},
		{
			name:     "unknown kind",
			in:       engine.Input{Turn: &projector.Turn{Blocks: []events.Block{{ID: "x", Kind: "image", Text: "?"}}}},
			wantText: `kind "image"`,
		},
		{
			name:     "tool result without call ID",
			in:       engine.Input{Turn: &projector.Turn{Blocks: []events.Block{{ID: "t", Kind: events.KindToolResult, Text: "?"}}}},
			wantText: "tool_result needs the call ID",
		},
		{
			name:     "tool parameters not an object",
			in:       engine.Input{Turn: conversation(), Tools: []engine.ToolSpec{{Name: "bad", Parameters: json.RawMessage(`[1,2]`)}}},
			wantText: `tool "bad": parameters must be a JSON Schema object`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Infer(context.Background(), tc.in, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantText)
		})
	}
}

func TestMessageMappingEdges(t *testing.T) {
	cases := []struct {
		name   string
		blocks []events.Block
		want   string
	}{
		{
			name: "untrusted other before the first user message is not a system message",
			blocks: []events.Block{
				{ID: "o", Kind: events.KindOther, Text: "pasted notes"},
				{ID: "u", Kind: events.KindUser, Text: "hi"},
			},
			want: `[{"role":"assistant","content":"[summary] pasted notes"},{"role":"user","content":"hi"}]`,
		},
		{
			name: "texts of one assistant turn are joined, text after tool calls stays with them",
			blocks: []events.Block{
				{ID: "u", Kind: events.KindUser, Text: "go"},
				{ID: "t1", Kind: events.KindLLMText, Text: "one"},
				{ID: "c", Kind: events.KindToolCall, CallID: "c", ToolName: "f", Arguments: `{}`},
				{ID: "t2", Kind: events.KindLLMText, Text: "two"},
				{ID: "r", Kind: events.KindToolResult, CallID: "c", Text: "done"},
				{ID: "t3", Kind: events.KindLLMText, Text: "three"},
			},
			want: `[{"role":"user","content":"go"},
				{"role":"assistant","content":"one\n\ntwo","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c","content":"done"},
				{"role":"assistant","content":"three"}]`,
		},
		{
			name: "tool calls without text have no content",
			blocks: []events.Block{
				{ID: "u", Kind: events.KindUser, Text: "go"},
				{ID: "c", Kind: events.KindToolCall, CallID: "c", ToolName: "f", Arguments: `{"a":1}`},
				{ID: "r", Kind: events.KindToolResult, CallID: "c", Text: ""},
			},
			want: `[{"role":"user","content":"go"},
				{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
				{"role":"tool","tool_call_id":"c","content":""}]`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, _ map[string]json.RawMessage) {
				writeJSON(w, http.StatusOK, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
			})
			_, err := newEngine(t, srv, false).Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: tc.blocks}}, nil)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(srv.recorded(t)[0].body["messages"]))
		})
	}
}

func TestConfig(t *testing.T) {
	t.Run("from env", func(t *testing.T) {
		t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
		t.Setenv("OPENAI_API_KEY", "k")
		t.Setenv("OPENAI_MODEL", "llama3.2")
		assert.Equal(t, openai.Config{BaseURL: "http://127.0.0.1:11434/v1", APIKey: "k", Model: "llama3.2", Stream: true}, openai.ConfigFromEnv())
	})
	t.Run("from empty env", func(t *testing.T) {
		t.Setenv("OPENAI_BASE_URL", "")
		t.Setenv("OPENAI_API_KEY", "")
		t.Setenv("OPENAI_MODEL", "")
		assert.Equal(t, openai.DefaultConfig(), openai.ConfigFromEnv())
		assert.Equal(t, openai.Config{BaseURL: openai.DefaultBaseURL, Stream: true}, openai.DefaultConfig())
	})
	cases := []struct {
		name    string
		baseURL string
		wantErr bool
	}{
		{name: "empty means OpenAI", baseURL: ""},
		{name: "ollama", baseURL: "http://127.0.0.1:11434/v1"},
		{name: "trailing slash", baseURL: "https://api.openai.com/v1/"},
		{name: "no scheme", baseURL: "127.0.0.1:11434/v1", wantErr: true},
		{name: "not http", baseURL: "ftp://example.com/v1", wantErr: true},
		{name: "relative", baseURL: "/v1", wantErr: true},
		{name: "query", baseURL: "http://127.0.0.1/v1?x=1", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openai.New(openai.Config{BaseURL: tc.baseURL})
			if tc.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "OPENAI_BASE_URL")
				return
			}
			require.NoError(t, err)
		})
	}
}
