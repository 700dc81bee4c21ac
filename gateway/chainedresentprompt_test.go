package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestChainedCallResendingThePromptIsNoChange: the Vercel AI SDK, given
// providerOptions.openai.previousResponseId, sends its system prompt as a
// developer message among every chained call's new items. Each chained
// call was found system_prompt_changed ("the active system prompt is now
// system … at index 0, …; the provider's prompt cache is lost"), live and
// by replay --check, though the text was the same and the provider's
// cache, a prefix of the history, was kept. A chained call whose prompt
// has the previous call's text is no change; another text still is.
func TestChainedCallResendingThePromptIsNoChange(t *testing.T) {
	up := newNumberedResponses(t)
	r := newRig(t, up.URL, "")
	conv := ""
	call := func(prev, prompt, text string) string {
		t.Helper()
		body := map[string]any{"model": "m", "input": []any{
			map[string]any{"role": "developer", "content": prompt},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}},
		}}
		if prev != "" {
			body["previous_response_id"] = prev
		}
		b, _ := json.Marshal(body)
		resp, out := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, string(b))
		if conv == "" {
			conv = resp.Header.Get("Turnlog-Conversation")
		}
		assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "one conversation, by previous_response_id")
		var got struct{ ID string }
		require.NoError(t, json.Unmarshal(out, &got))
		return got.ID
	}
	r1 := call("", "Be brief.", "one")
	r2 := call(r1, "Be brief.", "two")
	r3 := call(r2, "Be brief.", "three")
	call(r3, "Be verbose.", "four")

	type found struct {
		Call int
		Rule string
	}
	var live []found
	calls := map[string]int{}
	for _, e := range conversationEvents(t, r.log, conv) {
		switch p := e.Payload.(type) {
		case events.InferenceStarted:
			calls[p.InferenceID] = len(calls) + 1
		case events.FindingRecorded:
			live = append(live, found{calls[p.InferenceID], p.Rule})
		}
	}
	require.Len(t, calls, 4)
	assert.Equal(t, []found{{4, "system_prompt_changed"}}, live, "the same prompt sent again is no change; another text is")
	checked, err := replay.Check(t.Context(), r.log, conv)
	require.NoError(t, err)
	var replayed []found
	for _, f := range checked.Findings {
		replayed = append(replayed, found{f.Call, string(f.Rule)})
	}
	assert.Equal(t, live, replayed, "replay --check finds what the gateway recorded")
	verify(t, r.log, conv)
}
