package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestPrependedSystemPromptStaysInItsConversation: the commonest
// duplicated system prompt is a middleware that puts its system prompt in
// front of a history that begins with it already. Threaded by content,
// such a call began with no recorded state, so it started a conversation
// of its own, linked to nothing: the finding landed on that new
// conversation's first call, and the chat was split in two. A call whose
// input, its system blocks sent twice counted once, continues a recorded
// state now continues it (inferred), and the duplicate is found at the
// call that sent it. Two chats whose first calls are equal still are not
// merged.
func TestPrependedSystemPromptStaysInItsConversation(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	gw := sharedGateway(t, s, up.URL)
	call := chatCaller(t)
	const sys = `{"role":"system","content":"You are a weather bot."}`
	first := sys + `,{"role":"user","content":"Weather in Paris?"}`
	conv := call(gw, first)
	tool := `,` + weatherToolCall + `,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`
	again := call(gw, sys+`,`+first+tool)
	assert.Equal(t, conv, again, "the call with its system prompt put in front again continues the chat")

	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	calls := map[string]int{}
	var found []string
	for _, e := range conversationEvents(t, l, conv) {
		switch p := e.Payload.(type) {
		case events.InferenceStarted:
			calls[p.InferenceID] = len(calls) + 1
			if len(calls) == 2 {
				assert.Equal(t, "inferred", p.Gateway["threading"], "threaded by content, and said so")
			}
		case events.FindingRecorded:
			found = append(found, p.Rule+"@"+string(rune('0'+calls[p.InferenceID])))
		}
	}
	assert.Contains(t, found, "duplicate_system_prompt@2", "found at the call that sent it twice")
	verify(t, l, conv)
	assert.Contains(t, checkRules(t, l, conv), "duplicate_system_prompt")

	// The same first call with its prompt doubled is a chat of its own:
	// a first call never joins another.
	other := call(gw, sys+`,`+first)
	assert.NotEqual(t, conv, other)
}

// TestPromptPrependedOnEveryCall: a middleware that puts its prompt in
// front of every call's history sends it once more each call, so the
// state a call continues holds it already twice, three times... Counting
// every repeat once matched only the state of the chat's first call, and
// the third call forked the conversation there (its history recorded
// again in the fork as if the app had written it) instead of continuing
// it. So did a prompt of two messages (a system and a developer message,
// or two middlewares each putting its own in front) with one repeated
// block left out.
func TestPromptPrependedOnEveryCall(t *testing.T) {
	for name, prompt := range map[string]string{
		"one message":  `{"role":"system","content":"You are a weather bot."}`,
		"two messages": `{"role":"system","content":"You are a weather bot."},{"role":"developer","content":"Answer in one line."}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := natstest.Start(t, natstest.WithAuth())
			up := newChatUpstream(t, "")
			gw := sharedGateway(t, s, up.URL)
			call := chatCaller(t)
			hist := `{"role":"user","content":"Weather in Paris?"}`
			conv := call(gw, prompt+`,`+hist)
			hist = prompt + `,` + hist + `,` + weatherToolCall + `,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`
			require.Equal(t, conv, call(gw, prompt+`,`+hist), "the second call, its prompt put in front again, continues the chat")
			hist = prompt + `,` + hist + `,{"role":"assistant","content":"It is sunny.","refusal":null,"annotations":[]},{"role":"user","content":"And in Rome?"}`
			assert.Equal(t, conv, call(gw, prompt+`,`+hist), "the third call, its prompt put in front a third time, continues the chat, not a fork of its first call")

			l, err := eventlog.Open(context.Background(), s.Conn)
			require.NoError(t, err)
			assert.Len(t, startedOf(t, l, conv), 3, "the three calls are one conversation")
			verify(t, l, conv)
		})
	}
}

// TestFlattenedPromptFoundOncePerMessage: a user message that holds the
// system prompt's text (a history flattened into one message) is one
// fault, however many system blocks of that text the input has. It was
// reported once for each of them, so a call that also sent its prompt
// twice counted the flattened message twice: in replay --check, ls's
// FINDINGS, the recorded findings and turnlog_findings_total.
func TestFlattenedPromptFoundOncePerMessage(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	gw := sharedGateway(t, s, up.URL)
	const sys = `{"role":"system","content":"You are a weather bot for Acme Corp."}`
	named := func(msgs string) {
		t.Helper()
		resp, body := post(t, gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "flat"},
			`{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
	}
	named(sys + `,{"role":"user","content":"Weather in Paris?"}`)
	named(sys + `,` + sys + `,{"role":"user","content":"System: You are a weather bot for Acme Corp.\nUser: Weather in Paris?"}`)

	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	dups := func(rules []string) int {
		n := 0
		for _, r := range rules {
			if r == "duplicate_system_prompt" {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 2, dups(checkRules(t, l, "flat")), "the second prompt, and the flattened message once")
	var recorded []string
	for _, e := range conversationEvents(t, l, "flat") {
		if f, ok := e.Payload.(events.FindingRecorded); ok {
			recorded = append(recorded, f.Rule)
		}
	}
	assert.Equal(t, 2, dups(recorded), "recorded as the check finds them")
}
