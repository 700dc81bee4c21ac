package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/providertest"
)

// toolThenText answers the first call with reasoning and a tool call, and
// the call with the tool's result with reasoning and text.
func toolThenText(r providertest.Request) providertest.Reply {
	if len(r.ToolResults) == 0 {
		return providertest.Reply{Reasoning: []string{"The user wants the weather."}, Calls: []providertest.Call{{Name: "weather", Arguments: `{"city":"Paris"}`}}}
	}
	return providertest.Reply{Reasoning: []string{"The tool answered."}, Text: "It is sunny."}
}

// checkCall asserts what every SDK test checks: byte-exact both ways,
// one conversation, replay --verify, and the reasoning recorded with its
// opaque part.
func checkCall(t *testing.T, r *rig, res sdkResult, calls int) []events.Event {
	t.Helper()
	require.Equal(t, []string{"It is sunny."}, res.Texts)
	sent, received, _ := r.wire.snapshot()
	assert.Equal(t, res.Sent, sent, "request bodies byte for byte")
	assert.Equal(t, res.Received, received, "response bodies byte for byte")
	require.Len(t, res.Conversations, calls)
	for _, c := range res.Conversations {
		assert.Equal(t, res.Conversations[0], c)
	}
	v := verify(t, r.log, res.Conversations[0])
	assert.Equal(t, calls, v.Inferences)
	evs := conversationEvents(t, r.log, res.Conversations[0])
	enc := 0
	for _, e := range evs {
		if p, ok := e.Payload.(events.ReasoningAppended); ok && p.Encrypted != "" {
			enc++
		}
	}
	assert.Equal(t, calls, enc, "each call's reasoning is recorded once, with its opaque part")
	return evs
}

func TestOpenAISDKResponsesStatelessReasoning(t *testing.T) {
	up := providertest.NewResponses(t, toolThenText)
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.OpenAIKey = "sk-provider-secret" })
	res := runSDK(t, "responses_reasoning.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	assert.Empty(t, up.Violations(), "the strict upstream found nothing wrong")
	checkCall(t, r, res, 2)
}

func TestAnthropicSDKThinking(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
	}{{"not streamed", ""}, {"streamed", "1"}} {
		t.Run(tc.name, func(t *testing.T) {
			up := providertest.NewMessages(t, toolThenText)
			// Pass-through: the client's provider key goes upstream as it came.
			r := newRig(t, "", up.URL)
			res := runSDK(t, "messages_thinking.js", "BASE_URL="+r.gw.URL, "API_KEY=sk-ant-client-key", "TURNLOG_TOKEN="+token, "STREAM="+tc.stream)
			assert.Empty(t, up.Violations(), "the strict upstream found nothing wrong")
			_, _, headers := r.wire.snapshot()
			for _, h := range headers {
				// This SDK sends its key as a bearer token; either way it
				// goes upstream as the client sent it.
				assert.Contains(t, []string{h.Get("X-Api-Key"), h.Get("Authorization")}, "Bearer sk-ant-client-key", "%v", h)
				assert.Empty(t, h.Get("Turnlog-Token"), "no Turnlog-* header reaches the upstream")
			}
			checkCall(t, r, res, 2)
		})
	}
}
