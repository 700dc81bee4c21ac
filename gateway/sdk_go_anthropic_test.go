package gateway_test

import (
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/providertest"
)

// anthropicClient is an anthropic-sdk-go client of the gateway, its wire
// noted.
func anthropicClient(r *rig, w *sdkWire, opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{option.WithBaseURL(r.gw.URL),
		option.WithMiddleware(w.middleware), option.WithMaxRetries(0)}, opts...)...)
}

// thinkingToolLoop is testdata/messages_thinking.js with anthropic-sdk-go:
// Messages with extended thinking and a tool, streamed (the message
// accumulated from its events) or not, the assistant's content (thinking
// with its signature) sent back as the SDK's ToParam makes it, with the
// tool's result, until the model answers with text. It returns the text
// and the signature of every thinking block the SDK got.
func thinkingToolLoop(t *testing.T, client anthropic.Client, stream bool) (string, []string) {
	t.Helper()
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "weather", Description: anthropic.String("Weather of a city"),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}
	var signatures []string
	for range 3 {
		params := anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 2048, Messages: msgs, Tools: tools,
			System: []anthropic.TextBlockParam{{Text: "You answer briefly."}}, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024)}
		var msg anthropic.Message
		if stream {
			s := client.Messages.NewStreaming(t.Context(), params)
			for s.Next() {
				require.NoError(t, msg.Accumulate(s.Current()))
			}
			require.NoError(t, s.Err())
			require.NoError(t, s.Close())
		} else {
			m, err := client.Messages.New(t.Context(), params)
			require.NoError(t, err)
			msg = *m
		}
		msgs = append(msgs, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		text := ""
		for _, b := range msg.Content {
			switch b.Type {
			case "thinking":
				signatures = append(signatures, b.Signature)
			case "tool_use":
				results = append(results, anthropic.NewToolResultBlock(b.ID, "sunny, 21 C", false))
			case "text":
				text += b.Text
			}
		}
		if len(results) == 0 {
			return text, signatures
		}
		msgs = append(msgs, anthropic.NewUserMessage(results...))
	}
	t.Fatal("the model never answered with text")
	return "", nil
}

// TestGoSDKAnthropicThinking: anthropic-sdk-go's tool loop with extended
// thinking, streamed and not, through the gateway in managed mode (its
// API key turnlog's token, the upstream given the provider's key): the
// first call's thinking block goes back on the second with its signature
// unchanged (the strict upstream refuses any other, and received it byte
// for byte), byte for byte both ways, one conversation ("new", then
// "inferred"), replay --verify passes, and each signature is recorded.
func TestGoSDKAnthropicThinking(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{{"not streamed", false}, {"streamed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			up := providertest.NewMessages(t, toolThenText)
			r := newRig(t, "", up.URL, func(c *gateway.Config) { c.AnthropicKey = "sk-ant-provider-secret" })
			var w sdkWire
			text, signatures := thinkingToolLoop(t, anthropicClient(r, &w, option.WithAPIKey(token)), tc.stream)
			sentBackAsIssued(t, r, &w, up, text, "signature", signatures, "sk-ant-provider-secret")
		})
	}
}

// TestGoSDKAnthropicPassThroughKey: with no provider key in the gateway's
// configuration, anthropic-sdk-go sends its own key (x-api-key) and
// turnlog's token in Turnlog-Token; the upstream receives the SDK's key
// unchanged and no Turnlog-* header. A client without the token gets
// turnlog's 401, which the SDK surfaces as an *anthropic.Error of status
// 401, and nothing of that call is forwarded or recorded.
func TestGoSDKAnthropicPassThroughKey(t *testing.T) {
	up := providertest.NewMessages(t, toolThenText)
	r := newRig(t, "", up.URL)
	var w sdkWire
	text, _ := thinkingToolLoop(t, anthropicClient(r, &w, option.WithAPIKey("sk-ant-client-key"), option.WithHeader("Turnlog-Token", token)), true)
	assert.Empty(t, up.Violations())
	_, _, headers := r.wire.snapshot()
	require.Len(t, headers, 2)
	for _, h := range headers {
		assert.Equal(t, "sk-ant-client-key", h.Get("X-Api-Key"), "the SDK's key, unchanged")
		assert.Empty(t, h.Get("Turnlog-Token"))
	}
	checkCall(t, r, w.result(text), 2)

	before, err := r.log.Conversations(t.Context())
	require.NoError(t, err)
	var refused sdkWire
	client := anthropicClient(r, &refused, option.WithAPIKey("sk-ant-client-key"))
	_, err = client.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Rome?"))}})
	var apiErr *anthropic.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 401, apiErr.StatusCode)
	assert.Equal(t, []int{401}, refused.statuses, "refused once: the SDK does not retry a 401")
	sent, _, _ := r.wire.snapshot()
	assert.Len(t, sent, 2, "nothing more was forwarded")
	assert.Len(t, up.Requests(), 2)
	after, err := r.log.Conversations(t.Context())
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing was recorded")
}

// TestGoSDKAnthropicRetriedCall: the upstream answers one call's first
// attempt 529 (overloaded; the second call of anthropic-sdk-go's thinking
// tool loop, or the first); the SDK retries it on its own and the retry
// succeeds, its thinking signature accepted by the strict upstream. The
// SDK gets the answer, the failed attempt is recorded as a failed call,
// the retry continues the same conversation, the user's message and the
// tool's result are in it once, and replay --verify passes. The first
// call's retry starts a conversation of its own (a gateway limitation):
// that subtest is skipped while it does.
func TestGoSDKAnthropicRetriedCall(t *testing.T) {
	retriedCalls(t, 529, func(t *testing.T, fail int) (*rig, *sdkWire) {
		msgs := providertest.NewMessages(t, toolThenText)
		t.Cleanup(func() { assert.Empty(t, msgs.Violations()) })
		up := failingFirst(t, msgs.Config.Handler, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, fail)
		r := newRig(t, "", up.URL, func(c *gateway.Config) { c.AnthropicKey = "sk-ant-provider-secret" })
		w := &sdkWire{}
		text, _ := thinkingToolLoop(t, anthropicClient(r, w, option.WithAPIKey(token), option.WithMaxRetries(2)), false)
		assert.Equal(t, "It is sunny.", text)
		return r, w
	})
}
