package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// TestChainedCallWithoutInstructionsHadNoPrompt: the Responses API keeps a
// chain's items, not its calls' instructions, which apply to their call
// alone. A call continuing by previous_response_id without instructions
// was recorded as having read the previous call's (its inference.started
// named that system prompt, and replay --inference showed it), though the
// model read none. It now names none; a call that sends instructions
// names them, and a system message of the history the provider holds
// stays the prompt of the calls after it.
func TestChainedCallWithoutInstructionsHadNoPrompt(t *testing.T) {
	up := newNumberedResponses(t)
	r := newRig(t, up.URL, "")
	call := func(conv string, body map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(body)
		_, out := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}, string(b))
		var got struct{ ID string }
		require.NoError(t, json.Unmarshal(out, &got))
		return got.ID
	}
	prompts := func(conv string) (out []string) {
		for _, e := range conversationEvents(t, r.log, conv) {
			if st, ok := e.Payload.(events.InferenceStarted); ok {
				out = append(out, st.SystemPromptHash)
			}
		}
		return out
	}

	r1 := call("instructions", map[string]any{"model": "m", "instructions": "You are Alpha.", "input": "one"})
	r2 := call("instructions", map[string]any{"model": "m", "instructions": "You are Alpha.", "input": "two", "previous_response_id": r1})
	call("instructions", map[string]any{"model": "m", "input": "three", "previous_response_id": r2})
	alpha := projector.HashText("You are Alpha.")
	assert.Equal(t, []string{alpha, alpha, ""}, prompts("instructions"), "the third call sent no instructions: its model read no prompt")
	var shown []string
	for e, err := range replay.Entries(t.Context(), r.log, "instructions") {
		require.NoError(t, err)
		if e.Inference != nil {
			text := ""
			if e.Inference.SystemPrompt != nil {
				text = e.Inference.SystemPrompt.Text
			}
			shown = append(shown, text)
		}
	}
	assert.Equal(t, []string{"You are Alpha.", "You are Alpha.", ""}, shown, "replay --inference shows each call's own prompt")

	r1 = call("history", map[string]any{"model": "m", "input": []any{map[string]any{"role": "developer", "content": "You are Beta."}, map[string]any{"role": "user", "content": "one"}}})
	call("history", map[string]any{"model": "m", "input": "two", "previous_response_id": r1})
	beta := projector.HashText("You are Beta.")
	assert.Equal(t, []string{beta, beta}, prompts("history"), "a developer message is an item of the history the provider keeps")
	verify(t, r.log, "instructions")
	verify(t, r.log, "history")
}
