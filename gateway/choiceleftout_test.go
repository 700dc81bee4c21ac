package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestLeftOutChoiceTakenIsNoRewrite: a call of several choices whose
// outcome was too large to store keeps the last of its other choices as
// {"index": i, "omitted_bytes": n}. An app that goes on with such a
// choice (the model's own answer) was reported history_rewritten, as if
// it had sent a text the model never gave, though going on with a choice
// kept whole was not. A left-out choice must be recognised when sent back
// as a kept one is; another text in its place is still a rewrite.
func TestLeftOutChoiceTakenIsNoRewrite(t *testing.T) {
	each := strings.Repeat("y", smallPayload/4) // 4 of them fill a message
	up := newBigChoicesUpstream(t, "first "+each, each)
	r, _ := newSmallRig(t, up.URL)
	for _, tc := range []struct {
		name  string
		taken string
		rules []string
	}{
		{name: "a choice kept", taken: "choice 1 " + each},
		{name: "a choice left out", taken: "choice 5 " + each},
		{name: "a text no choice holds", taken: "choice 9 " + each, rules: []string{"history_rewritten"}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				conv := fmt.Sprintf("leftout-%s-%v", strings.ReplaceAll(tc.name, " ", "-"), stream)
				headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}
				msgs := `{"role":"user","content":"hi"}`
				_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","n":6,"stream":%v,"messages":[%s]}`, stream, msgs))
				fin := lastFinished(t, r, conv)
				require.Contains(t, fin.OtherChoices, `"omitted_bytes"`, "some choices were left out")
				require.NotContains(t, fin.OtherChoices, "choice 5 ", "choice 5 was left out")
				msgs += fmt.Sprintf(`,{"role":"assistant","content":%q},{"role":"user","content":"go on"}`, tc.taken)
				_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","stream":%v,"messages":[%s]}`, stream, msgs))

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

// lastFinished returns conv's last inference.finished.
func lastFinished(t *testing.T, r *rig, conv string) events.InferenceFinished {
	t.Helper()
	var fin events.InferenceFinished
	for _, e := range conversationEvents(t, r.log, conv) {
		if p, ok := e.Payload.(events.InferenceFinished); ok {
			fin = p
		}
	}
	return fin
}
