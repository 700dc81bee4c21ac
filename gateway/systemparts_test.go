package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestSystemTextSentTwiceInOnePromptIsADuplicate: a middleware that
// appends the system prompt to every request, on the Messages API, sends
// "system" as two text blocks of the same text. The gateway records
// Messages' system as one system block (its parts' texts joined), so the
// rule comparing system blocks saw one prompt and found nothing, where
// the same fault on Chat Completions (two system messages) is a
// duplicate_system_prompt. The call that first sends it now has the
// finding, naming the system block and the text sent twice, recorded by
// the gateway and found again by replay --check; the record still
// re-renders to the input hash, and the conversation threads as before
// (the system is still one block).
func TestSystemTextSentTwiceInOnePromptIsADuplicate(t *testing.T) {
	up := newFixedUpstream(t, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Arr."}],`+
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":2}}`)
	r := newRig(t, "", up.URL)
	h := map[string]string{"Turnlog-Token": token, "anthropic-version": "2023-06-01"}
	call := func(system, msgs string) string {
		t.Helper()
		resp, _ := postOK(t, r.gw.URL+"/v1/messages", h, `{"model":"c","max_tokens":64,"system":`+system+`,"messages":[`+msgs+`]}`)
		return resp.Header.Get("Turnlog-Conversation")
	}
	const twice = `[{"type":"text","text":"Be a pirate."},{"type":"text","text":"Be a pirate.","cache_control":{"type":"ephemeral"}}]`
	first := `{"role":"user","content":"hi"}`
	conv := call(twice, first)
	second := first + `,{"role":"assistant","content":"Arr."},{"role":"user","content":"where is the gold?"}`
	require.Equal(t, conv, call(twice, second), "the next call continues the conversation")
	verify(t, r.log, conv)

	var system []events.SystemPromptSet
	var recorded []events.FindingRecorded
	for _, e := range conversationEvents(t, r.log, conv) {
		switch p := e.Payload.(type) {
		case events.SystemPromptSet:
			system = append(system, p)
		case events.FindingRecorded:
			recorded = append(recorded, p)
		}
	}
	require.Len(t, system, 1, "Messages' system is one block, as it was: threading keys are unchanged")
	assert.Equal(t, "Be a pirate.\nBe a pirate.", system[0].Text)

	checked, err := replay.Check(t.Context(), r.log, conv)
	require.NoError(t, err)
	require.Len(t, checked.Findings, 1, "%+v", checked.Findings)
	f := checked.Findings[0]
	assert.Equal(t, "duplicate_system_prompt", string(f.Rule))
	assert.Equal(t, 1, f.Call, "found at the call that first sent it, once")
	assert.Equal(t, []string{system[0].BlockID}, f.Blocks)
	assert.Contains(t, f.Detail, `"Be a pirate."`, "the finding names the text sent twice")
	require.Len(t, recorded, 1, "the gateway recorded what replay --check finds")
	assert.Equal(t, f.Detail, recorded[0].Detail)
	assert.Equal(t, f.Blocks, recorded[0].Blocks)

	// Two different texts are one prompt written in parts: no finding.
	other := call(`[{"type":"text","text":"Be a pirate."},{"type":"text","text":"Speak briefly."}]`, `{"role":"user","content":"ahoy"}`)
	require.NotEqual(t, conv, other)
	verify(t, r.log, other)
	assert.Empty(t, checkRules(t, r.log, other))
}

// TestChatSystemMessageWithItsTextTwiceIsADuplicate: the same fault on
// Chat Completions written in one system message whose content is two
// text parts of the same text.
func TestChatSystemMessageWithItsTextTwiceIsADuplicate(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("Arr."))
	r := newRig(t, up.URL, "")
	resp, _ := postOK(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token},
		`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"Be a pirate."},{"type":"text","text":"Be a pirate."}]},{"role":"user","content":"hi"}]}`)
	conv := resp.Header.Get("Turnlog-Conversation")
	verify(t, r.log, conv)
	assert.Equal(t, []string{"duplicate_system_prompt"}, checkRules(t, r.log, conv))
}
