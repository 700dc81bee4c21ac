package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestUnreadBodiesAreForwardedAndRecordedByTheirHash: a body that is not
// JSON, or not its API's shape, goes upstream as it came (the upstream
// decides), and is recorded as an unparsed call: its API, the SHA-256 of
// its bytes and why it was not read. --verify, the timeline and the calls
// view say there is no input to re-project, not that the log disagrees
// with one (the timeline said "NOT VERIFIED: the log re-projects to
// another input", and the call named no API).
func TestUnreadBodiesAreForwardedAndRecordedByTheirHash(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("ok"))
	r := newRig(t, up.URL, "")
	for _, tc := range []struct{ name, body, why string }{
		{"not JSON", `model=m&messages=hi`, "not a JSON object"},
		{"messages not a list", `{"model":"m","messages":{"role":"user","content":"hi"}}`, "messages"},
		{"a role no API has", `{"model":"m","messages":[{"role":"\u001b[2Jboss","content":"hi"}]}`, "role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := "unread-" + map[string]string{"not JSON": "a", "messages not a list": "b", "a role no API has": "c"}[tc.name]
			resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}, tc.body)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			r.wire.mu.Lock()
			assert.Equal(t, sum([]byte(tc.body)), r.wire.sent[len(r.wire.sent)-1], "forwarded byte for byte")
			r.wire.mu.Unlock()

			started, finished, _ := inferences(t, r, conv)
			require.Len(t, started, 1)
			assert.Equal(t, 1, finished)
			g := started[0].Gateway
			assert.Equal(t, "chat.completions", g["api"])
			assert.Equal(t, sum([]byte(tc.body)), g["wire_sha256"])
			assert.Contains(t, g["unparsed"], tc.why)
			for _, e := range conversationEvents(t, r.log, conv) {
				_, user := e.Payload.(events.UserAppended)
				assert.False(t, user, "nothing of an unread body is taken as a message")
			}
			v := verify(t, r.log, conv)
			assert.Equal(t, 1, v.Unparsed)
		})
	}
}
