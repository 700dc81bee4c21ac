package calls

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestLegacyFunctionCalling: an assistant message's function_call and the
// "function" message that answers it (OpenAI's function calling before
// tool_calls, still accepted) are a tool call and its result, paired by
// the function's name. They were read as an empty model text and a result
// answering call "-", which replay --check reported as
// tool_result_without_call on every such conversation.
func TestLegacyFunctionCalling(t *testing.T) {
	call, err := chatBlocks([]byte(`{"role":"assistant","content":null,"function_call":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}`))
	require.NoError(t, err)
	assert.Equal(t, []events.Block{{Kind: events.KindToolCall, CallID: "function:weather", ToolName: "weather", Arguments: `{"city":"Paris"}`}}, call)
	result, err := chatBlocks([]byte(`{"role":"function","name":"weather","content":"sunny"}`))
	require.NoError(t, err)
	assert.Equal(t, []events.Block{{Kind: events.KindToolResult, CallID: "function:weather", Text: "sunny"}}, result)
	assert.True(t, events.IsLegacyFunctionCallID(call[0].CallID))

	s := NewStream(ChatCompletions, 1<<20)
	s.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"function_call\":{\"name\":\"weather\",\"arguments\":\"\"}}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"function_call\":{\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"function_call\"}]}\n\ndata: [DONE]\n\n"))
	o, err := s.Output()
	require.NoError(t, err)
	got := o.Blocks()
	require.Len(t, got, 1)
	assert.Equal(t, call[0].CallID, got[0].CallID, "streamed, the same call")
	assert.Equal(t, call[0].Arguments, got[0].Arguments)
}
