package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestMessagesWithMidConversationSystemMessage: the Vercel AI SDK's
// @ai-sdk/anthropic (3.0.140) sends a system message that comes after the
// chat's first message as a message of role "system" in the Messages
// API's list (with the anthropic-beta mid-conversation-system-2026-04-07),
// not in the top-level system member. The gateway refused to read such a
// request ("role \"system\": the Messages API takes user and assistant
// messages"): each call was recorded by its hash alone, in a conversation
// of its own, unchecked and unverifiable. It is read: the message is a
// system block where it was sent, the chat stays one conversation, the
// log renders the request again, and a system prompt sent again this way
// each turn (the seeds' prompt appended on every request) is found at the
// call that sent it.
func TestMessagesWithMidConversationSystemMessage(t *testing.T) {
	up := newFixedUpstream(t, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":3}}`)
	r := newRig(t, "", up.URL)
	headers := map[string]string{"Turnlog-Token": token, "anthropic-version": "2023-06-01", "anthropic-beta": "mid-conversation-system-2026-04-07"}
	resp, _ := postOK(t, r.gw.URL+"/v1/messages", headers,
		`{"model":"claude-sonnet-4-5","max_tokens":1000,"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]}`)
	conv := resp.Header.Get("Turnlog-Conversation")
	resp, _ = postOK(t, r.gw.URL+"/v1/messages", headers,
		`{"model":"claude-sonnet-4-5","max_tokens":1000,"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]},{"role":"assistant","content":[{"type":"text","text":"Hi."}]},{"role":"system","content":[{"type":"text","text":"Be brief."}]},{"role":"user","content":[{"type":"text","text":"again"}]}]}`)
	require.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "one chat, one conversation")
	for _, e := range conversationEvents(t, r.log, conv) {
		if st, ok := e.Payload.(events.InferenceStarted); ok {
			assert.Empty(t, st.Gateway["unparsed"], "the request is read")
		}
	}
	assert.Equal(t, []string{"Be brief.", "hello", "Hi.", "Be brief.", "again", "Hi."}, blockTexts(t, r.log, conv))
	v := verify(t, r.log, conv)
	assert.Equal(t, 2, v.Inferences)
	assert.Equal(t, []string{"duplicate_system_prompt"}, checkRules(t, r.log, conv))
}
