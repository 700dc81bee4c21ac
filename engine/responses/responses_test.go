package responses_test

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
	"github.com/turnlog/turnlog/engine/openai"
	"github.com/turnlog/turnlog/engine/responses"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/projector"
)

const testKey = "sk-test-responses-0123456789"

var weatherTool = []engine.ToolSpec{{Name: "get_weather", Description: "Weather of a city.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}

func newEngine(t *testing.T, url string, stream bool) *responses.Engine {
	t.Helper()
	cfg := responses.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.Stream = url+"/v1", testKey, "o4-mini", stream
	e, err := responses.New(cfg)
	require.NoError(t, err)
	return e
}

// appendOutput adds a model call's output to turn as the chain would.
func appendOutput(turn *projector.Turn, out engine.Output) {
	for _, b := range out.Blocks {
		b.ID = engine.NewID()
		turn.Blocks = append(turn.Blocks, b)
	}
}

// weatherReplies is a tool loop: reasoning and a call, then reasoning and
// the answer.
func weatherReplies(req providertest.Request) providertest.Reply {
	if len(req.ToolResults) > 0 {
		return providertest.Reply{Reasoning: []string{"The tool said " + req.ToolResults[0] + "."}, Text: "It is " + req.ToolResults[0] + " in Paris."}
	}
	return providertest.Reply{Reasoning: []string{"**Weather**", "I need the tool."}, Calls: []providertest.Call{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}
}

func TestToolLoopSendsReasoningBack(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := providertest.NewResponses(t, weatherReplies)
			e := newEngine(t, srv.URL, stream)
			turn := &projector.Turn{Conversation: "c", Blocks: []events.Block{
				{ID: "s", Kind: events.KindSystem, Text: "Be brief.", Trust: events.Trusted},
				{ID: "u", Kind: events.KindUser, Text: "Weather in Paris?"},
			}}

			var deltas []engine.Delta
			out, err := e.Infer(context.Background(), engine.Input{Turn: turn, Tools: weatherTool}, func(d engine.Delta) { deltas = append(deltas, d) })
			require.NoError(t, err)
			require.Len(t, out.Blocks, 2)
			r, call := out.Blocks[0], out.Blocks[1]
			assert.Equal(t, events.KindReasoning, r.Kind)
			assert.Equal(t, "**Weather**\n\nI need the tool.", r.Text, "replay shows the summary")
			assert.True(t, strings.HasPrefix(r.Encrypted, "gAAAAB"), "the encrypted content is stored")
			assert.True(t, srv.Issued(r.Meta[responses.MetaItemID]))
			assert.JSONEq(t, `["**Weather**","I need the tool."]`, r.Meta[responses.MetaSummary], "the summary parts exactly")
			assert.Equal(t, events.KindToolCall, call.Kind)
			assert.Equal(t, "get_weather", call.ToolName)
			assert.JSONEq(t, `{"city":"Paris"}`, call.Arguments)
			assert.NotEmpty(t, call.CallID)
			assert.Equal(t, "completed", out.StopReason)
			assert.Equal(t, engine.Usage{PromptTokens: 11, CompletionTokens: 7}, out.Usage)
			var reasoning string
			for _, d := range deltas {
				assert.Equal(t, events.KindReasoning, d.Kind)
				reasoning += d.Text
			}
			assert.Equal(t, r.Text, reasoning, "the deltas add up to the stored text")
			if stream {
				assert.Greater(t, len(deltas), 2, "streamed in pieces")
			}

			appendOutput(turn, out)
			turn.Blocks = append(turn.Blocks, events.Block{ID: "t", Kind: events.KindToolResult, CallID: call.CallID, Text: "18C"})
			deltas = nil
			out, err = e.Infer(context.Background(), engine.Input{Turn: turn, Tools: weatherTool}, func(d engine.Delta) { deltas = append(deltas, d) })
			require.NoError(t, err)
			require.Len(t, out.Blocks, 2)
			assert.Equal(t, "It is 18C in Paris.", out.Blocks[1].Text)
			assert.Equal(t, events.KindLLMText, out.Blocks[1].Kind)

			assert.Empty(t, srv.Violations())
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, 1, reqs[1].Reasoning, "the reasoning item went back")
			for _, r := range reqs {
				assert.Equal(t, testKey, r.APIKey, "the configured key, as Authorization: Bearer")
			}
			assert.Equal(t, []string{"Be brief."}, reqs[1].System)
			assert.Equal(t, []string{"18C"}, reqs[1].ToolResults)
			// The request as the API documents it.
			body := reqs[1].Body
			assert.Equal(t, "false", string(body["store"]))
			assert.JSONEq(t, `["reasoning.encrypted_content"]`, string(body["include"]))
			assert.JSONEq(t, `{"summary":"auto"}`, string(body["reasoning"]))
			var input []map[string]any
			require.NoError(t, json.Unmarshal(body["input"], &input))
			require.Len(t, input, 5)
			assert.Equal(t, "system", input[0]["role"])
			assert.Equal(t, "reasoning", input[2]["type"])
			assert.Equal(t, r.Encrypted, input[2]["encrypted_content"], "byte for byte")
			assert.Equal(t, r.Meta[responses.MetaItemID], input[2]["id"])
			assert.Equal(t, "function_call", input[3]["type"], "immediately followed by its function call")
			assert.Equal(t, call.Meta[responses.MetaItemID], input[3]["id"], "which carries its ID: the API pairs them by it")
			assert.Equal(t, "function_call_output", input[4]["type"])
			assert.Equal(t, call.CallID, input[4]["call_id"])
			var tools []map[string]any
			require.NoError(t, json.Unmarshal(body["tools"], &tools))
			assert.Equal(t, false, tools[0]["strict"], "turnlog's schemas are not written for strict mode")

			// The answer's reasoning goes back before its message, which
			// is sent as the output message it was: its ID and status.
			answer := out.Blocks[1]
			appendOutput(turn, out)
			turn.Blocks = append(turn.Blocks, events.Block{ID: "u2", Kind: events.KindUser, Text: "Thanks."})
			_, err = e.Infer(context.Background(), engine.Input{Turn: turn, Tools: weatherTool}, nil)
			require.NoError(t, err)
			assert.Empty(t, srv.Violations())
			reqs = srv.Requests()
			require.Len(t, reqs, 3)
			assert.Equal(t, 2, reqs[2].Reasoning)
			input = nil
			require.NoError(t, json.Unmarshal(reqs[2].Body["input"], &input))
			require.Len(t, input, 8)
			assert.Equal(t, "reasoning", input[5]["type"])
			assert.Equal(t, map[string]any{"type": "message", "role": "assistant", "id": answer.Meta[responses.MetaItemID], "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": "It is 18C in Paris.", "annotations": []any{}}}}, input[6])
		})
	}
}

func TestRenderRefusesWhatTheAPIRejects(t *testing.T) {
	srv := providertest.NewResponses(t, weatherReplies)
	e := newEngine(t, srv.URL, true)
	out, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "Weather?"}}}, Tools: weatherTool}, nil)
	require.NoError(t, err)
	r := out.Blocks[0]
	r.ID = "r"

	cases := []struct {
		name   string
		blocks []events.Block
		want   string
	}{
		{name: "reasoning followed by a user block", want: "block 1 (r): reasoning is followed by a user block",
			blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "q"}, r, {ID: "u2", Kind: events.KindUser, Text: "again"}}},
		{name: "reasoning at the end", want: "followed by nothing",
			blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "q"}, r}},
		{name: "a system block between reasoning and its text", want: "followed by a system block",
			blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "q"}, r, {ID: "s", Kind: events.KindSystem, Text: "p"}, {ID: "a", Kind: events.KindLLMText, Text: "x"}}},
		{name: "summary metadata edited", want: "responses.summary is not a JSON array",
			blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "q"}, withMeta(r, responses.MetaSummary, "{"), {ID: "a", Kind: events.KindLLMText, Text: "x"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(srv.Requests())
			_, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: tc.blocks}}, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotErrorIs(t, err, engine.ErrTransient)
			assert.Len(t, srv.Requests(), before, "nothing is sent")
		})
	}

	t.Run("another provider's reasoning is not sent, nor the ID of its follower", func(t *testing.T) {
		_, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: []events.Block{
			{ID: "u", Kind: events.KindUser, Text: "q"},
			{ID: "x", Kind: events.KindReasoning, Text: "chat completions reasoning"},
			{ID: "a", Kind: events.KindLLMText, Text: "x", Meta: map[string]string{responses.MetaItemID: "msg_from_elsewhere"}},
			{ID: "u2", Kind: events.KindUser, Text: "more"},
		}}}, nil)
		require.NoError(t, err, "an ID-less message requires no reasoning item")
		reqs := srv.Requests()
		assert.Equal(t, 0, reqs[len(reqs)-1].Reasoning)
		assert.NotContains(t, string(reqs[len(reqs)-1].Body["input"]), `"id"`)
	})

	t.Run("a changed byte of encrypted content is refused by the server", func(t *testing.T) {
		tampered := r
		tampered.Encrypted = flipByte(r.Encrypted, 10)
		_, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: []events.Block{
			{ID: "u", Kind: events.KindUser, Text: "q"}, tampered, {ID: "a", Kind: events.KindLLMText, Text: "x"}, {ID: "u2", Kind: events.KindUser, Text: "more"},
		}}}, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "could not be verified")
		assert.NotErrorIs(t, err, engine.ErrTransient)
	})
}

// flipByte changes the byte at i of s to another base64 character.
func flipByte(s string, i int) string {
	c := byte('X')
	if s[i] == c {
		c = 'Y'
	}
	return s[:i] + string(c) + s[i+1:]
}

func withMeta(b events.Block, k, v string) events.Block {
	b = b.Clone()
	b.Meta[k] = v
	return b
}

func TestErrors(t *testing.T) {
	turn := &projector.Turn{Blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "hi"}}}
	sse := func(w http.ResponseWriter, evs ...string) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range evs {
			var head struct{ Type string }
			_ = json.Unmarshal([]byte(e), &head)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, e)
		}
	}
	cases := []struct {
		name          string
		stream        bool
		respond       func(w http.ResponseWriter)
		wantTransient bool
		want          []string
	}{
		{name: "429", respond: func(w http.ResponseWriter) {
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		}, wantTransient: true, want: []string{"HTTP 429", "Rate limit reached"}},
		{name: "401 echoing the key", respond: func(w http.ResponseWriter) {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided: `+testKey+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
		}, want: []string{"HTTP 401", "[redacted]", "OPENAI_API_KEY"}},
		{name: "400 reasoning without follower", respond: func(w http.ResponseWriter) {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":{"message":"Item 'rs_1' of type 'reasoning' was provided without its required following item.","type":"invalid_request_error","param":"input","code":null}}`)
		}, want: []string{"HTTP 400", "without its required following item"}},
		{name: "response.failed with server_error", stream: true, respond: func(w http.ResponseWriter) {
			sse(w, `{"type":"response.created","sequence_number":0,"response":{"id":"r","object":"response","status":"in_progress","output":[]}}`,
				`{"type":"response.failed","sequence_number":1,"response":{"id":"r","object":"response","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}}`)
		}, wantTransient: true, want: []string{"error event in stream", "The model failed.", "server_error"}},
		{name: "response.failed with invalid_prompt", stream: true, respond: func(w http.ResponseWriter) {
			sse(w, `{"type":"response.failed","sequence_number":0,"response":{"id":"r","object":"response","status":"failed","error":{"code":"invalid_prompt","message":"Bad prompt."},"output":[]}}`)
		}, want: []string{"Bad prompt.", "invalid_prompt"}},
		{name: "error event", stream: true, respond: func(w http.ResponseWriter) {
			sse(w, `{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null,"sequence_number":0}`)
		}, wantTransient: true, want: []string{"Slow down."}},
		{name: "stream cut before completion", stream: true, respond: func(w http.ResponseWriter) {
			sse(w, `{"type":"response.created","sequence_number":0,"response":{"id":"r","object":"response","status":"in_progress","output":[]}}`)
		}, wantTransient: true, want: []string{"without response.completed"}},
		{name: "server cannot stream", stream: true, respond: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"r","object":"response","status":"completed","output":[]}`)
		}, want: []string{"set Config.Stream to false"}},
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
			var apiErr *openai.APIError
			if !strings.Contains(tc.name, "cut") && !strings.Contains(tc.name, "cannot") {
				assert.ErrorAs(t, err, &apiErr)
			}
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
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_MODEL", "gpt-5-mini")
	assert.Equal(t, responses.Config{BaseURL: responses.DefaultBaseURL, APIKey: "sk-env", Model: "gpt-5-mini", Stream: true, ReasoningSummary: "auto"}, responses.ConfigFromEnv())
	for _, bad := range []responses.Config{
		{BaseURL: "api.openai.com/v1"},
		{ReasoningEffort: "extreme"},
		{ReasoningSummary: "long"},
		{MaxOutputTokens: -1},
	} {
		_, err := responses.New(bad)
		assert.Error(t, err, "%+v", bad)
	}
	t.Run("the process's key does not reach a configured server", func(t *testing.T) {
		srv := providertest.NewResponses(t, func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
		var auth string
		wrapped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			auth = r.Header.Get("Authorization")
			srv.Config.Handler.ServeHTTP(w, r)
		}))
		defer wrapped.Close()
		e, err := responses.New(responses.Config{BaseURL: wrapped.URL + "/v1", Model: "m", Stream: true})
		require.NoError(t, err)
		out, err := e.Infer(context.Background(), engine.Input{Turn: &projector.Turn{Blocks: []events.Block{{ID: "u", Kind: events.KindUser, Text: "hi"}}}}, nil)
		require.NoError(t, err)
		assert.Equal(t, "ok", out.Blocks[0].Text)
		assert.Empty(t, auth)
		assert.NotContains(t, srv.Requests()[0].Body, "reasoning", "no summary asked: no reasoning parameter")
	})
}
