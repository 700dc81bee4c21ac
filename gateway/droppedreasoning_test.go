package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
)

// TestCallLeavingOutEarlierThinkingContinuesItsConversation: Anthropic
// strips the thinking of earlier turns from what the model reads, and
// lets a client leave it out; many do. Such a call did not begin with the
// recorded state (which holds the thinking), so it started a conversation
// of its own, re-recording the first answer: one chat, two conversations.
// It now continues the conversation, whose record says the thinking was
// left out; erasing the conversation removes the index's entry of the
// state without its thinking too.
func TestCallLeavingOutEarlierThinkingContinuesItsConversation(t *testing.T) {
	up := newFixedUpstream(t, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[`+
		`{"type":"thinking","thinking":"Two and two.","signature":"c2lnbmF0dXJl"},{"type":"text","text":"4"}],`+
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":4}}`)
	ctx := context.Background()
	r := newRig(t, "", up.URL, func(c *gateway.Config) {
		th, err := c.Log.(*eventlog.Log).Threads(ctx)
		require.NoError(t, err)
		c.Threads = th
	})
	h := map[string]string{"Turnlog-Token": token, "anthropic-version": "2023-06-01"}
	call := func(msgs string) string {
		t.Helper()
		resp, body := post(t, r.gw.URL+"/v1/messages", h, `{"model":"c","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":512},"messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	first := `{"role":"user","content":"2+2?"}`
	conv := call(first)
	second := first + `,{"role":"assistant","content":[{"type":"text","text":"4"}]},{"role":"user","content":"and 3+3?"}`
	assert.Equal(t, conv, call(second), "the call that left out the thinking continues the chat")
	third := second + `,{"role":"assistant","content":"4"},{"role":"user","content":"thanks"}`
	assert.Equal(t, conv, call(third))
	verify(t, r.log, conv)

	_, err := r.log.Erase(ctx, conv)
	require.NoError(t, err)
	noThreadingEntryOf(t, r.log, conv)
	assert.NotEqual(t, conv, call(second), "an erased chat is not revived by its content")
}
