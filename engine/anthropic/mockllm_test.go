package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/anthropic"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/mockllm"
	"github.com/turnlog/turnlog/projector"
)

// mockMessages are mock-llm rules (internal/mockllm) that answer POST
// /v1/messages with a documented Message: a thinking block with its
// signature, a redacted_thinking block and a text echoing the last user
// text. The first rule matches only a request with the key as x-api-key,
// an anthropic-version, thinking enabled, the system prompt in the system
// field and a user message first; the second (the later matching rule
// answers) only one that also sends both blocks back unchanged at the head
// of the assistant message they came in, and answers "again: ...". A
// request that breaks these gets mock-llm's 404.
const mockMessages = `rules:
  - path: "^/v1/messages$"
    method: POST
    match: "headers.\"x-api-key\" == 'mock-key' && headers.\"anthropic-version\" != null && body.thinking.type == 'enabled' && body.system[0].text == 'You are an echo.' && length(body.system) == ` + "`1`" + ` && body.messages[0].role == 'user' && body.stream == null"
    response:
      status: 200
      content: |
        {"id": "msg_mock1", "type": "message", "role": "assistant", "model": "{{jmes request body.model}}",
         "content": [
           {"type": "thinking", "thinking": "Echo it.", "signature": "EqQB-mock-signature"},
           {"type": "redacted_thinking", "data": "EmwK-mock-redacted"},
           {"type": "text", "text": "{{jmes request body.messages[-1].content[-1].text}}"}],
         "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 3}}
  - path: "^/v1/messages$"
    method: POST
    match: "headers.\"x-api-key\" == 'mock-key' && body.thinking.type == 'enabled' && length(body.messages) == ` + "`3`" + ` && body.messages[0].role == 'user' && body.messages[1].role == 'assistant' && body.messages[1].content[0].type == 'thinking' && body.messages[1].content[0].thinking == 'Echo it.' && body.messages[1].content[0].signature == 'EqQB-mock-signature' && body.messages[1].content[1].type == 'redacted_thinking' && body.messages[1].content[1].data == 'EmwK-mock-redacted' && body.messages[1].content[2].text == 'first' && body.messages[2].role == 'user'"
    response:
      status: 200
      content: |
        {"id": "msg_mock2", "type": "message", "role": "assistant", "model": "{{jmes request body.model}}",
         "content": [{"type": "text", "text": "again: {{jmes request body.messages[-1].content[-1].text}}"}],
         "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 9, "output_tokens": 4}}
`

// TestMockLLM runs a blocking two-call conversation against mock-llm: the
// thinking and redacted_thinking blocks of the first answer are stored and
// go back unchanged in the second request. Only blocking calls: mock-llm
// streams Chat Completions chunks whatever the path.
func TestMockLLM(t *testing.T) {
	baseURL := mockllm.Start(t, mockMessages)
	cfg := anthropic.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.Stream = baseURL, "mock-key", "claude-sonnet-4-5", false
	cfg.Thinking = anthropic.Thinking{Budget: 2048}
	e, err := anthropic.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	turn := &projector.Turn{Conversation: "mock", Blocks: []events.Block{
		{ID: "s", Kind: events.KindSystem, Text: "You are an echo.", Trust: events.Trusted},
		{ID: "u1", Kind: events.KindUser, Text: "first"},
	}}
	out, err := e.Infer(ctx, engine.Input{Turn: turn}, nil)
	require.NoError(t, err, "the first rule matched: the key, thinking, one system prompt, a user message first")
	require.Len(t, out.Blocks, 2)
	r := out.Blocks[0]
	assert.Equal(t, events.KindReasoning, r.Kind)
	assert.Equal(t, "Echo it.", r.Text)
	var stored []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Encrypted), &stored))
	require.Len(t, stored, 2)
	assert.Equal(t, "EqQB-mock-signature", stored[0]["signature"])
	assert.Equal(t, "EmwK-mock-redacted", stored[1]["data"])
	assert.Equal(t, events.Block{Kind: events.KindLLMText, Text: "first"}, out.Blocks[1])
	assert.Equal(t, "end_turn", out.StopReason)

	appendOutput(turn, out)
	turn.Blocks = append(turn.Blocks, events.Block{ID: "u2", Kind: events.KindUser, Text: "second"})
	out, err = e.Infer(ctx, engine.Input{Turn: turn}, nil)
	require.NoError(t, err)
	require.Len(t, out.Blocks, 1)
	assert.Equal(t, "again: second", out.Blocks[0].Text, "the second rule matched: the thinking blocks went back unchanged in their assistant turn")
}
