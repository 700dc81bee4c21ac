package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
)

// The openai SDK runs a streamed tool loop through the gateway in managed
// mode: the bytes it sent are the bytes the upstream received, the bytes
// the upstream sent are the bytes it received, both calls land in one
// conversation by content, and replay --verify proves both inputs.
func TestOpenAISDKChatStreamedToolLoop(t *testing.T) {
	up := newChatUpstream(t, "sk-provider-secret")
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.OpenAIKey = "sk-provider-secret" })
	res := runSDK(t, "chat_tools.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	require.Equal(t, []string{"It is sunny."}, res.Texts)
	sent, received, headers := r.wire.snapshot()
	assert.Equal(t, res.Sent, sent, "request bodies byte for byte")
	assert.Equal(t, res.Received, received, "response bodies byte for byte")
	for _, h := range headers {
		assert.Equal(t, "Bearer sk-provider-secret", h.Get("Authorization"))
	}
	require.Len(t, res.Conversations, 2)
	assert.Equal(t, res.Conversations[0], res.Conversations[1], "the second call continues the first's conversation")
	v := verify(t, r.log, res.Conversations[0])
	assert.Equal(t, 2, v.Inferences)
	evs := conversationEvents(t, r.log, res.Conversations[0])
	var threading []string
	for _, e := range evs {
		if p, ok := e.Payload.(events.InferenceStarted); ok {
			threading = append(threading, p.Gateway["threading"])
			assert.Equal(t, "gateway", e.Actor)
		}
	}
	assert.Equal(t, []string{"new", "inferred"}, threading)
}
