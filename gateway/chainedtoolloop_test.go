package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// The requests of a chat written with the Vercel AI SDK (ai 6 with
// @ai-sdk/openai 3, the Responses API) that chains its turns with
// providerOptions.openai.previousResponseId and gives the model a tool
// (generateText with stopWhen), as the SDK sent them: the tool loop's
// second step names the same previous_response_id as its first, and
// sends the first step's input again with the model's function_call and
// the tool's output.
const (
	vercelChainTools    = `"tools":[{"type":"function","name":"weather","description":"weather","parameters":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}],"tool_choice":"auto"}`
	vercelChainHello    = `{"model":"gpt-4.1-mini","input":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"hello"}]}],` + vercelChainTools
	vercelChainWeather  = `{"model":"gpt-4.1-mini","input":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"what is the weather?"}]}],"previous_response_id":"resp_1",` + vercelChainTools
	vercelChainToolStep = `{"model":"gpt-4.1-mini","input":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"what is the weather?"}]},{"type":"function_call","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_2","output":"sunny in Paris"}],"previous_response_id":"resp_1",` + vercelChainTools
	vercelChainThanks   = `{"model":"gpt-4.1-mini","input":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"thanks"}]}],"previous_response_id":"resp_3",` + vercelChainTools
)

// vercelChainAnswers are the upstream's answers to that chat: a text, the
// tool's call, a text after its result, a text.
var vercelChainAnswers = []string{
	`{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi.","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`,
	`{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"function_call","id":"fc_2","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Paris\"}","status":"completed"}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`,
	`{"id":"resp_3","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"message","id":"msg_3","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Sunny.","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`,
	`{"id":"resp_4","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"message","id":"msg_4","status":"completed","role":"assistant","content":[{"type":"output_text","text":"You are welcome.","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`,
}

// newScriptedResponses is a Responses API upstream that answers its n-th
// call with answers[n-1].
func newScriptedResponses(t *testing.T, answers ...string) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		i := int(n.Add(1))
		w.Header().Set("Content-Type", "application/json")
		if i > len(answers) {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"unexpected call","type":"server_error"}}`)
			return
		}
		io.WriteString(w, answers[i-1])
	}))
	t.Cleanup(up.Close)
	return up
}

// TestChainedToolLoopIsOneConversation: a tool loop chained by
// previous_response_id, as the Vercel AI SDK writes it, continues its
// step's previous_response_id again in its next step, re-sending the
// step's input and the model's function_call before the tool's output.
// That response is no longer its conversation's latest (the first step
// continued it), so each such step was taken for an app regenerating from
// an earlier answer and forked the conversation: one chat of three turns
// became two conversations, the second a copy of the first with the tool
// loop's step appended again. The step continues its conversation, the
// re-sent items being the blocks it holds already, and the chat is one
// conversation whose history is what the model read.
func TestChainedToolLoopIsOneConversation(t *testing.T) {
	up := newScriptedResponses(t, vercelChainAnswers...)
	r := newRig(t, up.URL, "", managed)
	var convs []string
	for _, body := range []string{vercelChainHello, vercelChainWeather, vercelChainToolStep, vercelChainThanks} {
		resp, _ := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Authorization": "Bearer " + token}, body)
		convs = append(convs, resp.Header.Get("Turnlog-Conversation"))
	}
	conv := convs[0]
	require.Equal(t, []string{conv, conv, conv, conv}, convs, "one chat, one conversation")

	turn, err := r.log.Load(t.Context(), conv)
	require.NoError(t, err)
	var got []string
	for _, b := range turn.Blocks {
		s := string(b.Kind) + " " + b.Text
		if b.Kind == events.KindToolCall {
			s += b.ToolName + b.Arguments
		}
		got = append(got, s)
	}
	assert.Equal(t, []string{
		"system Be brief.", "user hello", "llm_text Hi.",
		"system Be brief.", "user what is the weather?", `tool_call weather{"city":"Paris"}`, "tool_result sunny in Paris", "llm_text Sunny.",
		"system Be brief.", "user thanks", "llm_text You are welcome.",
	}, got, "the history the provider held at each call, each item once")
	v := verify(t, r.log, conv)
	assert.Equal(t, 4, v.Inferences)
	checked, err := replay.Check(t.Context(), r.log, conv)
	require.NoError(t, err)
	var at []int
	for _, f := range checked.Findings {
		// The SDK sends its system prompt as a message on every call:
		// the provider keeps each, and the model reads the prompt again
		// at each turn (reported, rightly); nothing else is.
		assert.Equal(t, check.RuleDuplicateSystemPrompt, f.Rule)
		at = append(at, f.Call)
		if f.Call == 4 {
			// The fourth call's message doubles the one the second call
			// appended (the third only sent it again).
			assert.Contains(t, f.Detail, "which call 2 sent as a message")
		}
	}
	assert.Equal(t, []int{2, 4}, at)
}

// TestVercelAISDKChainedToolLoop runs that chat with the Vercel AI SDK
// itself (testdata/vercel_chained_tools.js): one conversation, the bytes
// passed both ways unchanged, and replay --verify passes.
func TestVercelAISDKChainedToolLoop(t *testing.T) {
	up := newScriptedResponses(t, vercelChainAnswers...)
	r := newRig(t, up.URL, "", managed)
	res := runSDK(t, "vercel_chained_tools.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	assert.Equal(t, []string{"Hi.", "Sunny.", "You are welcome."}, res.Texts)
	sent, received, _ := r.wire.snapshot()
	assert.Equal(t, res.Sent, sent, "request bodies byte for byte")
	assert.Equal(t, res.Received, received, "response bodies byte for byte")
	require.Len(t, res.Conversations, 4)
	conv := res.Conversations[0]
	assert.Equal(t, []string{conv, conv, conv, conv}, res.Conversations, "one conversation")
	v := verify(t, r.log, conv)
	assert.Equal(t, 4, v.Inferences)
}

// TestChainedToolLoopOfAReasoningModel: the same tool loop with a
// reasoning model (gpt-5-mini), whose steps the Vercel AI SDK sends back
// without their reasoning items when it chains them by
// previous_response_id: the loop's second step still forked the
// conversation. It continues it; the reasoning the step left out is
// removed from the history, since the model no longer reads it there.
func TestChainedToolLoopOfAReasoningModel(t *testing.T) {
	const (
		tools   = `"tools":[{"type":"function","name":"weather","description":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}],"tool_choice":"auto"}`
		hello   = `{"model":"gpt-5-mini","input":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"hello"}]}],` + tools
		weather = `{"model":"gpt-5-mini","input":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"what is the weather?"}]}],"previous_response_id":"resp_1",` + tools
		step    = `{"model":"gpt-5-mini","input":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"what is the weather?"}]},{"type":"function_call","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_2","output":"sunny in Paris"}],"previous_response_id":"resp_1",` + tools
		usage   = `"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`
	)
	up := newScriptedResponses(t,
		`{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5-mini","output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi.","annotations":[]}]}],`+usage,
		`{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"gpt-5-mini","output":[{"type":"reasoning","id":"rs_2","summary":[]},{"type":"function_call","id":"fc_2","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Paris\"}","status":"completed"}],`+usage,
		`{"id":"resp_3","object":"response","created_at":1,"status":"completed","model":"gpt-5-mini","output":[{"type":"reasoning","id":"rs_3","summary":[]},{"type":"message","id":"msg_3","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Sunny.","annotations":[]}]}],`+usage,
	)
	r := newRig(t, up.URL, "", managed)
	var convs []string
	for _, body := range []string{hello, weather, step} {
		resp, _ := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Authorization": "Bearer " + token}, body)
		convs = append(convs, resp.Header.Get("Turnlog-Conversation"))
	}
	conv := convs[0]
	require.Equal(t, []string{conv, conv, conv}, convs, "one chat, one conversation")
	turn, err := r.log.Load(t.Context(), conv)
	require.NoError(t, err)
	var kinds []string
	for _, b := range turn.Blocks {
		kinds = append(kinds, string(b.Kind))
	}
	assert.Equal(t, []string{"system", "user", "reasoning", "llm_text", "system", "user", "tool_call", "tool_result", "reasoning", "llm_text"}, kinds,
		"the step's reasoning, which the third call left out, is no longer in the history")
	v := verify(t, r.log, conv)
	assert.Equal(t, 3, v.Inferences)

	// The model lost its reasoning for its own tool call, in the loop in
	// progress: reported at the call that left it out, as it is when the
	// same call sends its whole history.
	checked, err := replay.Check(t.Context(), r.log, conv)
	require.NoError(t, err)
	var rewritten []check.Finding
	for _, f := range checked.Findings {
		if f.Rule == check.RuleHistoryRewritten {
			rewritten = append(rewritten, f)
		}
	}
	var left []string // what the gateway removed: the step's reasoning
	for _, e := range conversationEvents(t, r.log, conv) {
		if p, ok := e.Payload.(events.BlocksRemoved); ok {
			left = append(left, p.BlockIDs...)
		}
	}
	require.Len(t, left, 1)
	require.Len(t, rewritten, 1, "%+v", checked.Findings)
	assert.Equal(t, 3, rewritten[0].Call)
	assert.Equal(t, left, rewritten[0].Blocks)
	assert.Contains(t, rewritten[0].Detail, "reasoning "+left[0]+" was removed since call 2")
}
