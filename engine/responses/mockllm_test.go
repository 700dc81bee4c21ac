package responses_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/responses"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/mockllm"
	"github.com/turnlog/turnlog/projector"
)

// mockResponses are mock-llm rules (internal/mockllm) that answer POST
// /v1/responses with a documented Response object: a reasoning item and a
// message echoing the last input item's text. The first rule matches only
// a stateless request asking for encrypted reasoning, with the key as
// Authorization: Bearer; the second (the later matching rule answers) only
// one that also sends the reasoning item back as issued, immediately
// followed by its message carrying its ID and status, and answers
// "again: ...". A request that breaks these gets mock-llm's 404.
const mockResponses = `rules:
  - path: "^/v1/responses$"
    method: POST
    match: "body.store == ` + "`false`" + ` && contains(body.include, 'reasoning.encrypted_content') && headers.authorization == 'Bearer mock-key' && body.stream == null"
    response:
      status: 200
      content: |
        {"id": "resp_mock1", "object": "response", "created_at": 1741290958, "status": "completed", "model": "{{jmes request body.model}}",
         "output": [
           {"id": "rs_mock1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Echo it."}], "encrypted_content": "gAAAAB-mock-ciphertext"},
           {"id": "msg_mock1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "{{jmes request body.input[-1].content}}", "annotations": []}]}],
         "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}
  - path: "^/v1/responses$"
    method: POST
    match: "body.store == ` + "`false`" + ` && headers.authorization == 'Bearer mock-key' && body.stream == null && length(body.input) == ` + "`5`" + ` && body.input[2].type == 'reasoning' && body.input[2].id == 'rs_mock1' && body.input[2].encrypted_content == 'gAAAAB-mock-ciphertext' && body.input[2].summary[0].text == 'Echo it.' && body.input[3].id == 'msg_mock1' && body.input[3].status == 'completed' && body.input[3].content[0].text == 'first'"
    response:
      status: 200
      content: |
        {"id": "resp_mock2", "object": "response", "created_at": 1741290959, "status": "completed", "model": "{{jmes request body.model}}",
         "output": [{"id": "msg_mock2", "type": "message", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": "again: {{jmes request body.input[-1].content}}", "annotations": []}]}],
         "usage": {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13}}
`

// TestMockLLM runs a blocking two-call conversation against mock-llm: the
// reasoning item of the first answer is stored exactly and goes back, with
// its follower's ID, in the second request. Only blocking calls: mock-llm
// streams Chat Completions chunks whatever the path.
func TestMockLLM(t *testing.T) {
	baseURL := mockllm.Start(t, mockResponses)
	e, err := responses.New(responses.Config{BaseURL: baseURL + "/v1", APIKey: "mock-key", Model: "o4-mini", Stream: false, ReasoningSummary: "auto"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	turn := &projector.Turn{Conversation: "mock", Blocks: []events.Block{
		{ID: "s", Kind: events.KindSystem, Text: "You are an echo.", Trust: events.Trusted},
		{ID: "u1", Kind: events.KindUser, Text: "first"},
	}}
	out, err := e.Infer(ctx, engine.Input{Turn: turn}, nil)
	require.NoError(t, err, "the first rule matched: a stateless request asking for encrypted reasoning, with the key")
	require.Len(t, out.Blocks, 2)
	assert.Equal(t, events.Block{Kind: events.KindReasoning, Text: "Echo it.", Encrypted: "gAAAAB-mock-ciphertext",
		Meta: map[string]string{responses.MetaItemID: "rs_mock1", responses.MetaSummary: `["Echo it."]`}}, out.Blocks[0])
	assert.Equal(t, events.Block{Kind: events.KindLLMText, Text: "first", Meta: map[string]string{responses.MetaItemID: "msg_mock1"}}, out.Blocks[1])
	assert.Equal(t, engine.Usage{PromptTokens: 5, CompletionTokens: 3}, out.Usage)

	appendOutput(turn, out)
	turn.Blocks = append(turn.Blocks, events.Block{ID: "u2", Kind: events.KindUser, Text: "second"})
	out, err = e.Infer(ctx, engine.Input{Turn: turn}, nil)
	require.NoError(t, err)
	require.Len(t, out.Blocks, 1)
	assert.Equal(t, "again: second", out.Blocks[0].Text, "the second rule matched: the reasoning item went back as issued, before its message with its ID")
}
