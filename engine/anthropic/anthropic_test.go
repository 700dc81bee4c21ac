package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/anthropic"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/projector"
)

const testKey = "sk-ant-test-0123456789"

var weatherTool = []engine.ToolSpec{{Name: "get_weather", Description: "Weather of a city.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}}

func newEngine(t *testing.T, url string, stream bool) *anthropic.Engine {
	t.Helper()
	cfg := anthropic.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.Stream = url, testKey, "claude-sonnet-4-5", stream
	cfg.Thinking = anthropic.Thinking{Budget: 2048}
	e, err := anthropic.New(cfg)
	require.NoError(t, err)
	return e
}

func appendOutput(turn *projector.Turn, out engine.Output) {
	for _, b := range out.Blocks {
		b.ID = engine.NewID()
		turn.Blocks = append(turn.Blocks, b)
	}
}

// weatherReplies is a tool loop with two thinking blocks and a redacted
// one before the call, then thinking and the answer.
func weatherReplies(req providertest.Request) providertest.Reply {
	if len(req.ToolResults) > 0 {
		return providertest.Reply{Reasoning: []string{"The tool said " + req.ToolResults[0] + "."}, Text: "It is " + req.ToolResults[0] + " in Paris."}
	}
	return providertest.Reply{Reasoning: []string{"Weather: a tool call.", "Paris, then."}, Redacted: true,
		Text: "Let me check.", Calls: []providertest.Call{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}
}

func TestToolLoopSendsThinkingBackUnchanged(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := providertest.NewMessages(t, weatherReplies)
			e := newEngine(t, srv.URL, stream)
			turn := &projector.Turn{Conversation: "c", Blocks: []events.Block{
				{ID: "s", Kind: events.KindSystem, Text: "Be brief.", Trust: events.Trusted},
				{ID: "g", Kind: events.KindSystem, Text: "Global policy.", Trust: events.Trusted},
				{ID: "u", Kind: events.KindUser, Text: "Weather in Paris?"},
			}}
			var deltas []engine.Delta
			out, err := e.Infer(context.Background(), engine.Input{Turn: turn, Tools: weatherTool}, func(d engine.Delta) { deltas = append(deltas, d) })
			require.NoError(t, err)
			require.Len(t, out.Blocks, 3, "one reasoning block for the run of thinking blocks, text, call")
			r := out.Blocks[0]
			assert.Equal(t, events.KindReasoning, r.Kind)
			assert.Equal(t, "Weather: a tool call.\n\nParis, then.", r.Text, "replay shows the thinking")
			assert.Equal(t, anthropic.ThinkingFormat, r.Meta[anthropic.MetaThinking])
			var stored []map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.Encrypted), &stored))
			require.Len(t, stored, 3)
			assert.Equal(t, "thinking", stored[0]["type"])
			assert.True(t, strings.HasPrefix(stored[0]["signature"].(string), "EqQB"))
			assert.Equal(t, "redacted_thinking", stored[2]["type"])
			assert.Equal(t, events.Block{Kind: events.KindLLMText, Text: "Let me check."}, out.Blocks[1])
			call := out.Blocks[2]
			assert.Equal(t, events.KindToolCall, call.Kind)
			assert.Equal(t, "get_weather", call.ToolName)
			assert.JSONEq(t, `{"city":"Paris"}`, call.Arguments)
			assert.Equal(t, "tool_use", out.StopReason)
			var thinking, text string
			for _, d := range deltas {
				if d.Kind == events.KindReasoning {
					thinking += d.Text
				} else {
					text += d.Text
				}
			}
			if stream {
				assert.Equal(t, "Weather: a tool call.Paris, then.", thinking, "thinking deltas as they came")
			} else {
				assert.Equal(t, r.Text, thinking)
			}
			assert.Equal(t, "Let me check.", text)

			appendOutput(turn, out)
			turn.Blocks = append(turn.Blocks, events.Block{ID: "t", Kind: events.KindToolResult, CallID: call.CallID, Text: "18C"})
			out, err = e.Infer(context.Background(), engine.Input{Turn: turn, Tools: weatherTool}, nil)
			require.NoError(t, err)
			require.Len(t, out.Blocks, 2)
			assert.Equal(t, "It is 18C in Paris.", out.Blocks[1].Text)
			assert.Equal(t, "end_turn", out.StopReason)

			assert.Empty(t, srv.Violations())
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, 3, reqs[1].Reasoning, "every thinking block went back")
			for _, r := range reqs {
				assert.Equal(t, testKey, r.APIKey, "the configured key, as x-api-key")
			}
			assert.Equal(t, []string{"Be brief.", "Global policy."}, reqs[1].System, "the system field, once")
			body := reqs[1].Body
			assert.JSONEq(t, `{"type":"enabled","budget_tokens":2048}`, string(body["thinking"]))
			assert.Equal(t, "8192", string(body["max_tokens"]))
			var msgs []struct {
				Role    string           `json:"role"`
				Content []map[string]any `json:"content"`
			}
			require.NoError(t, json.Unmarshal(body["messages"], &msgs))
			require.Len(t, msgs, 3)
			assert.Equal(t, "assistant", msgs[1].Role)
			var types []string
			for _, c := range msgs[1].Content {
				types = append(types, c["type"].(string))
			}
			assert.Equal(t, []string{"thinking", "thinking", "redacted_thinking", "text", "tool_use"}, types)
			assert.Equal(t, stored[0]["signature"], msgs[1].Content[0]["signature"], "byte for byte")
			assert.Equal(t, "Paris, then.", msgs[1].Content[1]["thinking"])
			assert.Equal(t, "tool_result", msgs[2].Content[0]["type"])
			var tools []map[string]any
			require.NoError(t, json.Unmarshal(body["tools"], &tools))
			assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`,
				mustJSON(t, tools[0]["input_schema"]))
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

func TestRenderRefusesWhatTheAPIRejects(t *testing.T) {
	srv := providertest.NewMessages(t, weatherReplies)
	e := newEngine(t, srv.URL, true)
	out, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "Weather?"}}}, Tools: weatherTool}, nil)
	require.NoError(t, err)
	r := out.Blocks[0]
	r.ID = "r"
	user := events.Block{ID: "u", Kind: events.KindUser, Text: "q"}
	text := events.Block{ID: "a", Kind: events.KindLLMText, Text: "x"}

	edited := r
	edited.Text = strings.Replace(r.Text, "Paris", "Rome!", 1)
	longer := r
	longer.Text = r.Text + "."
	cases := []struct {
		name   string
		blocks []events.Block
		want   string
	}{
		{name: "thinking followed by a user block", want: "block 1 (r): thinking is followed by a user block",
			blocks: []events.Block{user, r, {ID: "u2", Kind: events.KindUser, Text: "again"}}},
		{name: "thinking at the end", want: "followed by nothing", blocks: []events.Block{user, r}},
		{name: "thinking text edited, same length", want: "Invalid `signature`", blocks: []events.Block{user, r, text, {ID: "u2", Kind: events.KindUser, Text: "more"}}},
		{name: "thinking text edited, other length", want: "the text was edited", blocks: []events.Block{user, longer, text, {ID: "u2", Kind: events.KindUser, Text: "more"}}},
		{name: "stored blocks edited", want: "not a JSON array", blocks: []events.Block{user, withEncrypted(r, "{"), text}},
		{name: "the model's block first", want: "block 0 (a): the conversation begins with the model's llm_text block, and the Messages API requires the first message to be the user's",
			blocks: []events.Block{text, user}},
	}
	cases[2].blocks[1] = edited
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: tc.blocks}}, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotErrorIs(t, err, engine.ErrTransient)
		})
	}

	t.Run("another provider's reasoning is not sent", func(t *testing.T) {
		_, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: []events.Block{
			user, {ID: "x", Kind: events.KindReasoning, Text: "from elsewhere", Encrypted: "opaque"}, text, {ID: "u2", Kind: events.KindUser, Text: "more"},
		}}}, nil)
		require.NoError(t, err)
		reqs := srv.Requests()
		assert.Equal(t, 0, reqs[len(reqs)-1].Reasoning)
	})
	// After a compaction the summary is the first conversation block, and
	// the kept blocks may begin with the model's: the request still begins
	// with a user message and alternates (the fake refuses otherwise).
	for _, tc := range []struct {
		name   string
		blocks []events.Block
		want   string
	}{
		{name: "a compaction summary, then the user", blocks: []events.Block{{ID: "sum", Kind: events.KindOther, Text: "They talked about Paris."}, {ID: "u", Kind: events.KindUser, Text: "and now?"}},
			want: `[{"role":"user","content":[{"type":"text","text":"[summary] They talked about Paris."},{"type":"text","text":"and now?"}]}]`},
		{name: "a compaction summary, then the model", blocks: []events.Block{{ID: "sum", Kind: events.KindOther, Text: "They talked about Paris."}, text, {ID: "u", Kind: events.KindUser, Text: "and now?"}},
			want: `[{"role":"user","content":[{"type":"text","text":"[summary] They talked about Paris."}]},{"role":"assistant","content":[{"type":"text","text":"x"}]},{"role":"user","content":[{"type":"text","text":"and now?"}]}]`},
	} {
		t.Run(tc.name+": the summary is marked, on the user's side, never a second system prompt", func(t *testing.T) {
			blocks := append([]events.Block{{ID: "s", Kind: events.KindSystem, Text: "Be brief.", Trust: events.Trusted}}, tc.blocks...)
			_, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: blocks}}, nil)
			require.NoError(t, err)
			reqs := srv.Requests()
			last := reqs[len(reqs)-1]
			assert.Equal(t, []string{"Be brief."}, last.System)
			assert.JSONEq(t, tc.want, string(last.Body["messages"]))
		})
	}
	assert.Len(t, srv.Violations(), 1, "only the edited thinking reached the server, which refused it: %v", srv.Violations())
}

func withEncrypted(b events.Block, enc string) events.Block {
	b.Encrypted = enc
	return b
}

func TestErrors(t *testing.T) {
	turn := &projector.Turn{Blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "hi"}}}
	cases := []struct {
		name          string
		stream        bool
		respond       func(w http.ResponseWriter)
		wantTransient bool
		want          []string
	}{
		{name: "529 overloaded", respond: func(w http.ResponseWriter) {
			w.Header().Set("request-id", "req_1")
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		}, wantTransient: true, want: []string{"HTTP 529", "Overloaded", "overloaded_error", "req_1"}},
		{name: "429", respond: func(w http.ResponseWriter) {
			w.WriteHeader(429)
			fmt.Fprint(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`)
		}, wantTransient: true, want: []string{"HTTP 429", "rate limit"}},
		{name: "401 echoing the key", respond: func(w http.ResponseWriter) {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+testKey+`"}}`)
		}, want: []string{"HTTP 401", "[redacted]", "ANTHROPIC_API_KEY"}},
		{name: "400 bad signature", respond: func(w http.ResponseWriter) {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: Invalid `+"`signature`"+` in `+"`thinking`"+` block"}}`)
		}, want: []string{"HTTP 400", "Invalid `signature`"}},
		{name: "overloaded event in stream", stream: true, respond: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"x\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
			fmt.Fprint(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
		}, wantTransient: true, want: []string{"error event in stream", "Overloaded"}},
		{name: "stream cut before message_stop", stream: true, respond: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"x\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
		}, wantTransient: true, want: []string{"without message_stop"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; tc.respond(w) }))
			defer srv.Close()
			_, err := newEngine(t, srv.URL, tc.stream).Infer(context.Background(), engine.Input{Turn: turn}, nil)
			require.Error(t, err)
			assert.Equal(t, tc.wantTransient, errors.Is(err, engine.ErrTransient), "transient: %v", err)
			for _, s := range tc.want {
				assert.Contains(t, err.Error(), s)
			}
			assert.NotContains(t, err.Error(), testKey)
			assert.Equal(t, 1, calls, "the SDK must not retry by itself")
		})
	}
	t.Run("connection refused is transient, a cancelled context is not", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		e := newEngine(t, srv.URL, true)
		srv.Close()
		_, err := e.Infer(context.Background(), engine.Input{Turn: turn}, nil)
		assert.ErrorIs(t, err, engine.ErrTransient)

		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
		defer slow.Close()
		defer close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err = newEngine(t, slow.URL, true).Infer(ctx, engine.Input{Turn: turn}, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, engine.ErrTransient)
	})
}

func TestConfig(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-must-not-leak")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("ANTHROPIC_MODEL", "claude-haiku-4-5")
	assert.Equal(t, anthropic.Config{BaseURL: anthropic.DefaultBaseURL, APIKey: "sk-ant-env", Model: "claude-haiku-4-5", Stream: true}, anthropic.ConfigFromEnv())
	for _, bad := range []anthropic.Config{
		{BaseURL: "https://api.anthropic.com/v1"},
		{BaseURL: "api.anthropic.com"},
		{Thinking: anthropic.Thinking{Budget: 512}},
		{MaxTokens: 2048, Thinking: anthropic.Thinking{Budget: 4096}},
	} {
		_, err := anthropic.New(bad)
		assert.Error(t, err, "%+v", bad)
	}
	for s, want := range map[string]anthropic.Thinking{"": {}, "off": {}, "adaptive": {Adaptive: true}, "4096": {Budget: 4096}} {
		got, err := anthropic.ParseThinking(s)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	for _, s := range []string{"on", "100", "-5"} {
		_, err := anthropic.ParseThinking(s)
		assert.Error(t, err, s)
	}
	t.Run("the process's credentials do not reach a configured server", func(t *testing.T) {
		srv := providertest.NewMessages(t, func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
		var header http.Header
		wrapped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			header = r.Header.Clone()
			srv.Config.Handler.ServeHTTP(w, r)
		}))
		defer wrapped.Close()
		e, err := anthropic.New(anthropic.Config{BaseURL: wrapped.URL, Model: "m", Stream: true})
		require.NoError(t, err)
		out, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "hi"}}}}, nil)
		require.NoError(t, err)
		assert.Equal(t, "ok", out.Blocks[0].Text)
		assert.Empty(t, header.Get("X-Api-Key"))
		assert.Empty(t, header.Get("Authorization"))
		assert.NotContains(t, srv.Requests()[0].Body, "thinking", "thinking is off by default")
	})
}
