package gateway_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestAnotherChoiceTakenIsNoRewrite: an app asks for two answers ("n": 2)
// and goes on with the second, as picking the best of several is what "n"
// is for. The record keeps the first as the call's output and the second
// in other_choices; the next call sends the second back. replay --check
// (and the gateway's findings) reported history_rewritten, "the model's
// answer was removed", though the history the app sent is the model's own
// other answer. Sending back a text the model did not give is still
// reported.
func TestAnotherChoiceTakenIsNoRewrite(t *testing.T) {
	r := newRig(t, newChoicesUpstream(t).URL, "")
	for _, tc := range []struct {
		name  string
		taken string
		rules []string
	}{
		{name: "the second choice", taken: "answer B"},
		{name: "a text no choice holds", taken: "answer Z", rules: []string{"history_rewritten"}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				conv := fmt.Sprintf("taken-%s-%v", tc.taken[len(tc.taken)-1:], stream)
				headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}
				msgs := `{"role":"user","content":"hi"}`
				resp, out := post(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","n":2,"stream":%v,"messages":[%s]}`, stream, msgs))
				require.Equal(t, 200, resp.StatusCode, "%s", out)
				msgs += fmt.Sprintf(`,{"role":"assistant","content":%q},{"role":"user","content":"go on"}`, tc.taken)
				resp, out = post(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","n":2,"stream":%v,"messages":[%s]}`, stream, msgs))
				require.Equal(t, 200, resp.StatusCode, "%s", out)

				verify(t, r.log, conv)
				assert.Equal(t, tc.rules, checkRules(t, r.log, conv), "replay --check")
				var recorded []string
				for _, e := range conversationEvents(t, r.log, conv) {
					if p, ok := e.Payload.(events.FindingRecorded); ok {
						recorded = append(recorded, p.Rule)
					}
				}
				assert.Equal(t, tc.rules, recorded, "the gateway's findings")
			})
		}
	}
}
