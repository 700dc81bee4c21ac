package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/replay"
)

// The requests of a chat run with the OpenAI Agents SDK's Runner
// (@openai/agents, the Responses API) given the whole history each turn,
// whose triage agent hands off to an expert: each call sends its agent's
// instructions, so the call after the handoff sends the expert's, and the
// next turn (run with the triage agent again) the triage's.
const (
	handoffTools    = `"tools":[{"type":"function","name":"transfer_to_expert","description":"Handoff to the Expert agent","parameters":{"type":"object","properties":{},"required":[],"additionalProperties":false},"strict":true}]`
	handoffHello    = `{"model":"gpt-4.1-mini","instructions":"Route weather questions to the expert.","input":[{"role":"user","content":"hello"}],` + handoffTools + `}`
	handoffHistory1 = `{"role":"user","content":"hello"},{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi.","annotations":[]}],"status":"completed"},{"role":"user","content":"transfer me please"}`
	handoffTransfer = `{"model":"gpt-4.1-mini","instructions":"Route weather questions to the expert.","input":[` + handoffHistory1 + `],` + handoffTools + `}`
	handoffHistory2 = handoffHistory1 + `,{"id":"fc_2","type":"function_call","name":"transfer_to_expert","call_id":"call_2","arguments":"{}","status":"completed"},{"type":"function_call_output","call_id":"call_2","output":"{\"assistant\":\"Expert\"}","status":"completed"}`
	handoffExpert   = `{"model":"gpt-4.1-mini","instructions":"You answer weather questions.","input":[` + handoffHistory2 + `]}`
	handoffThanks   = `{"model":"gpt-4.1-mini","instructions":"Route weather questions to the expert.","input":[` + handoffHistory2 + `,{"type":"message","id":"msg_3","role":"assistant","content":[{"type":"output_text","text":"Sunny.","annotations":[]}],"status":"completed"},{"role":"user","content":"thanks"}],` + handoffTools + `}`
)

// TestHandoffWithWholeHistoryIsOneConversation: the call after an Agents
// SDK handoff continues the items of the call before it (its input and
// output), but sends other instructions. Threaded by content, its input
// began with no recorded state (a state holds the instructions its call
// sent), so it started a conversation of its own and one chat became two,
// the second turn's answer an unexplained assistant message in the first.
// The Responses API's instructions apply to their call alone, not to the
// history: the call continues the chat, and the change of instructions
// is reported where it happened (system_prompt_changed).
func TestHandoffWithWholeHistoryIsOneConversation(t *testing.T) {
	usage := `"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`
	up := newScriptedResponses(t,
		`{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi.","annotations":[]}]}],`+usage,
		`{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"function_call","id":"fc_2","call_id":"call_2","name":"transfer_to_expert","arguments":"{}","status":"completed"}],`+usage,
		`{"id":"resp_3","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"message","id":"msg_3","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Sunny.","annotations":[]}]}],`+usage,
		`{"id":"resp_4","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"message","id":"msg_4","status":"completed","role":"assistant","content":[{"type":"output_text","text":"You are welcome.","annotations":[]}]}],`+usage,
	)
	r := newRig(t, up.URL, "", managed)
	var convs []string
	for _, body := range []string{handoffHello, handoffTransfer, handoffExpert, handoffThanks} {
		resp, _ := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Authorization": "Bearer " + token}, body)
		convs = append(convs, resp.Header.Get("Turnlog-Conversation"))
	}
	conv := convs[0]
	require.Equal(t, []string{conv, conv, conv, conv}, convs, "one chat, one conversation")
	v := verify(t, r.log, conv)
	assert.Equal(t, 4, v.Inferences)
	checked, err := replay.Check(t.Context(), r.log, conv)
	require.NoError(t, err)
	var at []int
	for _, f := range checked.Findings {
		assert.Equal(t, check.RuleSystemPromptChanged, f.Rule, "%+v", f)
		at = append(at, f.Call)
	}
	assert.Equal(t, []int{3, 4}, at, "the instructions changed at the handoff, and back at the next turn")
}
