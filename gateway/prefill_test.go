package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrefillJoinedWithItsAnswerIsNoRewrite: an app that prefills
// Claude's answer (its request ends with an assistant message the answer
// continues, as Anthropic documents) sends the prefill and the answer back
// joined in one assistant message. replay --check reported both blocks as
// history_rewritten ("removed since call 1"). Dropping the prefill, or
// changing the answer, is still reported.
func TestPrefillJoinedWithItsAnswerIsNoRewrite(t *testing.T) {
	up := newFixedUpstream(t, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"\"a\": 1}"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":4}}`)
	r := newRig(t, "", up.URL)
	for _, tc := range []struct {
		conv, second string
		findings     []string
	}{
		{"joined", `{"role":"assistant","content":"{\"a\": 1}"}`, nil},
		{"prefill-dropped", `{"role":"assistant","content":"\"a\": 1}"}`, []string{"history_rewritten"}},
	} {
		t.Run(tc.conv, func(t *testing.T) {
			h := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": tc.conv, "anthropic-version": "2023-06-01", "x-api-key": "sk-ant"}
			resp, body := post(t, r.gw.URL+"/v1/messages", h,
				`{"model":"c","max_tokens":50,"messages":[{"role":"user","content":"give json"},{"role":"assistant","content":"{"}]}`)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			resp, body = post(t, r.gw.URL+"/v1/messages", h,
				`{"model":"c","max_tokens":50,"messages":[{"role":"user","content":"give json"},`+tc.second+`,{"role":"user","content":"again"}]}`)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			verify(t, r.log, tc.conv)
			rules := checkRules(t, r.log, tc.conv)
			if tc.findings == nil {
				assert.Empty(t, rules)
			} else {
				assert.Contains(t, rules, tc.findings[0])
			}
		})
	}
}
