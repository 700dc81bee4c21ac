package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// NATS back, a damaged conversation's spooled call waiting for its
// repair: a call that forks a conversation this gateway recorded, which
// another gateway has gone on with since, is a fork, as it is live. This
// gateway's own index holds the state the call goes on from as its
// conversation's latest; taken at its word, the call was recorded in
// that conversation, as if the app had rewritten its history (the other
// gateway's turn removed from it).
func TestHeldSpooledCallLeavesAForkOfAnotherGatewaysTurnAFork(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer("re "+req.Messages[len(req.Messages)-1].Content))
	}))
	t.Cleanup(up.Close)
	c := newCuttable(t, up.URL, 1<<20)
	auth := map[string]string{"Turnlog-Token": token}
	msgs := func(texts ...string) string {
		var b strings.Builder
		b.WriteString(`{"model":"gpt-test","messages":[{"role":"system","content":"be brief"}`)
		for i, s := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			fmt.Fprintf(&b, `,{"role":%q,"content":%q}`, role, s)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	// This gateway records a conversation's first call.
	resp, _ := postOK(t, c.gw.URL+"/v1/chat/completions", auth, msgs("alpha"))
	conv := resp.Header.Get("Turnlog-Conversation")
	require.NotEmpty(t, conv)

	// A damaged conversation's spooled call waits for its repair, and
	// another gateway, NATS up, records the conversation's second call.
	l, hs := holdADamagedCall(t, c, up.URL)
	resp, _ = postOK(t, hs.URL+"/v1/chat/completions", auth, msgs("alpha", "re alpha", "beta"))
	require.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"))

	// The app edits its second message: a fork of the first call's state,
	// through this gateway.
	resp, _ = postOK(t, c.gw.URL+"/v1/chat/completions", auth, msgs("alpha", "re alpha", "gamma"))
	assert.NotEqual(t, conv, resp.Header.Get("Turnlog-Conversation"), "a fork of the conversation is not its next call")
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 1 }, 20*time.Second, 20*time.Millisecond, "recorded but the damaged conversation's call")
	started, _, _ := inferences(t, &rig{log: l}, conv)
	assert.Len(t, started, 2, "the conversation holds its two calls, not the fork")
	assert.Empty(t, checkRules(t, l, conv))
}
