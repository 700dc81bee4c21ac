package calls

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnthropicCacheTokensCountAsInput: the Messages API counts the
// prompt's cached part apart from input_tokens (cache_creation_input_tokens,
// cache_read_input_tokens), and a call that read 1,200 tokens from the
// cache was recorded as 25 prompt tokens (found by the audit probe). The
// prompt's tokens are their sum, as Chat Completions' prompt_tokens and
// the Responses API's input_tokens count cached tokens too.
func TestAnthropicCacheTokensCountAsInput(t *testing.T) {
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn",` +
		`"usage":{"input_tokens":25,"cache_creation_input_tokens":1200,"cache_read_input_tokens":300,"output_tokens":150}}`
	out, err := ParseResponse(Messages, []byte(body))
	require.NoError(t, err)
	assert.Equal(t, 1525, out.PromptTokens)
	assert.Equal(t, 150, out.CompletionTokens)

	s := NewStream(Messages, 1<<20)
	_, _ = s.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":1200,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"ok\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	require.True(t, s.Done())
	assert.Equal(t, 1225, s.out.PromptTokens)
	assert.Equal(t, 4, s.out.CompletionTokens)
}
