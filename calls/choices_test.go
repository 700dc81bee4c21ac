package calls

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestOtherChoicesAreKept: a Chat Completions response of two choices (a
// request's "n": 2) is read as its first choice, which the conversation
// goes on with, and the second is kept whole (it was dropped from the
// record), streamed or not.
func TestOtherChoicesAreKept(t *testing.T) {
	second := `{"index":1,"message":{"role":"assistant","content":"choice B"},"logprobs":null,"finish_reason":"stop"}`
	body := `{"id":"c","object":"chat.completion","model":"m","choices":[` +
		`{"index":0,"message":{"role":"assistant","content":"choice A"},"logprobs":null,"finish_reason":"stop"},` + second + `]}`
	o, err := ParseResponse(ChatCompletions, []byte(body))
	require.NoError(t, err)
	assert.Equal(t, []events.Block{{Kind: events.KindLLMText, Text: "choice A"}}, o.Blocks())
	assert.Equal(t, "["+second+"]", o.OtherChoices, "as the provider wrote it")

	one := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"A"},"finish_reason":"stop"}]}`
	o, err = ParseResponse(ChatCompletions, []byte(one))
	require.NoError(t, err)
	assert.Empty(t, o.OtherChoices)

	stream := "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"choice \"}},{\"index\":1,\"delta\":{\"role\":\"assistant\",\"content\":\"other \"}}]}\n\n" +
		"data: {\"id\":\"x\",\"choices\":[{\"index\":1,\"delta\":{\"content\":\"one\",\"tool_calls\":[{\"index\":0,\"id\":\"call_b\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n" +
		"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"x\",\"choices\":[{\"index\":1,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"
	s := NewStream(ChatCompletions, 1<<20)
	for i := 0; i < len(stream); i += 5 {
		s.Write([]byte(stream[i:min(i+5, len(stream))]))
	}
	o, err = s.Output()
	require.NoError(t, err)
	assert.Equal(t, []events.Block{{Kind: events.KindLLMText, Text: "choice A"}}, o.Blocks(), "the first choice alone")
	assert.Equal(t, "stop", o.StopReason)
	assert.JSONEq(t, `[{"index":1,"message":{"role":"assistant","content":"other one","tool_calls":[{"id":"call_b","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]`,
		o.OtherChoices)
}
