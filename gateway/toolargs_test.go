package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// spacedToolUpstream answers a call whose last input is a user message with
// a tool call whose arguments are written with spaces ({"city": "Paris"},
// as vLLM's tool parsers and some models write them), and a call whose
// last input is the tool's result with text.
func spacedToolUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		result := strings.Contains(string(b), `"tool"`) || strings.Contains(string(b), `function_call_output`)
		switch {
		case r.URL.Path == "/v1/responses" && !result:
			io.WriteString(w, `{"id":"resp_1","object":"response","status":"completed","model":"m","output":[{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"weather","arguments":"{\"city\": \"Paris\"}"}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`)
		case r.URL.Path == "/v1/responses":
			io.WriteString(w, `{"id":"resp_2","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"It is sunny.","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`)
		case !result:
			io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\": \"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`)
		default:
			io.WriteString(w, `{"id":"c2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"It is sunny."},"finish_reason":"stop"}]}`)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestReserialisedToolArgumentsContinue: an SDK that parses a tool call's
// arguments and sends them back written by its own JSON writer (the Vercel
// AI SDK: {"city":"Paris"} for the model's {"city": "Paris"}) re-sends the
// same call. Its tool step started a conversation of its own (the
// arguments compared as text), and with Turnlog-Conversation, replay
// --check reported the history rewritten at every step. Arguments are
// compared as JSON; the record keeps what each call sent, and verifies.
func TestReserialisedToolArgumentsContinue(t *testing.T) {
	up := spacedToolUpstream(t)
	r := newRig(t, up.URL, "")
	hdr := map[string]string{"Turnlog-Token": token}
	call := func(path, body string) string {
		t.Helper()
		resp, _ := postOK(t, r.gw.URL+path, hdr, body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	compact := func(s string) string {
		var v any
		require.NoError(t, json.Unmarshal([]byte(s), &v))
		b, _ := json.Marshal(v)
		return string(b)
	}
	t.Run("responses", func(t *testing.T) {
		ask := `{"role":"user","content":"weather in Paris?"}`
		first := call("/v1/responses", `{"model":"m","input":[`+ask+`]}`)
		args, _ := json.Marshal(compact(`{"city": "Paris"}`))
		second := call("/v1/responses", fmt.Sprintf(`{"model":"m","input":[%s,{"type":"function_call","call_id":"call_1","name":"weather","arguments":%s},{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`, ask, args))
		assert.Equal(t, first, second, "the tool step continues the conversation")
		// A third call re-sending the same history adds no annotation.
		third := call("/v1/responses", fmt.Sprintf(`{"model":"m","input":[%s,{"type":"function_call","call_id":"call_1","name":"weather","arguments":%s},{"type":"function_call_output","call_id":"call_1","output":"sunny"},{"type":"message","role":"assistant","content":"It is sunny."},{"role":"user","content":"thanks"}]}`, ask, args))
		assert.Equal(t, first, third)
		annotated := map[string]int{}
		for _, e := range conversationEvents(t, r.log, first) {
			if a, ok := e.Payload.(events.BlockAnnotated); ok {
				annotated[a.BlockID]++
			}
		}
		require.NotEmpty(t, annotated, "the tool call is annotated with how this client writes it")
		for id, n := range annotated {
			assert.Equal(t, 1, n, "block %s annotated once, the first time it was sent back", id)
		}
		verify(t, r.log, first)
		assert.Empty(t, checkRules(t, r.log, first))
	})
	t.Run("chat completions", func(t *testing.T) {
		ask := `{"role":"user","content":"weather in Lyon?"}`
		first := call("/v1/chat/completions", `{"model":"m","messages":[`+ask+`]}`)
		args, _ := json.Marshal(compact(`{"city": "Paris"}`))
		second := call("/v1/chat/completions", fmt.Sprintf(`{"model":"m","messages":[%s,{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":%s}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}]}`, ask, args))
		assert.Equal(t, first, second, "the tool step continues the conversation")
		verify(t, r.log, first)
		assert.Empty(t, checkRules(t, r.log, first))
	})
}
