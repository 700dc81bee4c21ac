package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChainedCallResendingThePromptIsNoChange: the Vercel AI SDK, given
// providerOptions.openai.previousResponseId, sends its system prompt as a
// developer message among every chained call's new items. Each chained
// call was found system_prompt_changed ("the active system prompt is now
// system … at index 0, …; the provider's prompt cache is lost"), live and
// by replay --check, though the text was the same. It is no change, but
// the provider keeps the developer message of each call before in the
// history it holds: the model reads the prompt once more at each chained
// call, as an app that appends its prompt to every request sends it, and
// that is duplicate_system_prompt. The Responses API's instructions are
// not kept (they apply to their call): sent again, they are no finding.
// Another text is a change either way.
func TestChainedCallResendingThePromptIsNoChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		// modes says how each of the four calls sends its prompt: m as
		// a developer message, i as instructions.
		modes string
		want  []callFinding
	}{
		{"as a developer message", "mmmm", []callFinding{{2, "duplicate_system_prompt"}, {3, "duplicate_system_prompt"}, {4, "system_prompt_changed"}}},
		{"as instructions", "iiii", []callFinding{{4, "system_prompt_changed"}}},
		// The first call's developer message stays in the history the
		// provider holds, whatever the calls between sent: the model
		// reads the prompt twice at calls 2 (instructions and that
		// message) and 3 (two messages).
		{"as a message, then instructions, then a message again", "mimm", []callFinding{{2, "duplicate_system_prompt"}, {3, "duplicate_system_prompt"}, {4, "system_prompt_changed"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newNumberedResponses(t)
			r := newRig(t, up.URL, "")
			conv := ""
			n := 0
			call := func(prev, prompt, text string) string {
				t.Helper()
				n++
				input := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}}
				body := map[string]any{"model": "m"}
				if tc.modes[n-1] == 'i' {
					body["instructions"] = prompt
				} else {
					input = append([]any{map[string]any{"role": "developer", "content": prompt}}, input...)
				}
				body["input"] = input
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

			live, replayed, _ := liveAndReplayedFindings(t, r.log, conv, 4)
			assert.Equal(t, tc.want, live)
			assert.Equal(t, live, replayed, "replay --check finds what the gateway recorded")
			verify(t, r.log, conv)
		})
	}
}
