package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLegacyFunctionCallingIsChecked: an app on OpenAI's legacy function
// calling (function_call, role "function") is checked as a tool loop:
// every call answered, no finding, even when the same function is called
// twice with the same answer; a call left unanswered is reported. Every
// such call used to be reported as tool_result_without_call.
func TestLegacyFunctionCallingIsChecked(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("It is sunny."))
	r := newRig(t, up.URL, "")
	const call = `{"role":"assistant","content":null,"function_call":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}`
	const answer = `{"role":"function","name":"weather","content":"sunny"}`
	for _, tc := range []struct {
		conv, messages string
		findings       []string
	}{
		{"legacy-ok", `{"role":"user","content":"Weather in Paris?"},` + call + `,` + answer + `,{"role":"assistant","content":"It is sunny."},` +
			`{"role":"user","content":"And now?"},` + call + `,` + answer, nil},
		{"legacy-unanswered", `{"role":"user","content":"Weather in Paris?"},` + call + `,{"role":"user","content":"well?"}`, []string{"tool_call_without_result"}},
	} {
		t.Run(tc.conv, func(t *testing.T) {
			resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": tc.conv},
				`{"model":"m","messages":[`+tc.messages+`]}`)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			verify(t, r.log, tc.conv)
			assert.Equal(t, tc.findings, checkRules(t, r.log, tc.conv))
		})
	}
}
