package openai_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/openai"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/mockllm"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/projector"
)

// TestWireMatchesWhatMockLLMReceived: the hash a call records is that of
// the bytes a server turnlog did not write (mock-llm, behind a tap that
// keeps what arrived) received, and RenderWire makes those bytes again
// from the recorded parameters and the Turn, saying which blocks were not
// sent or were merged.
func TestWireMatchesWhatMockLLMReceived(t *testing.T) {
	tap := mockllm.NewTap(t, mockllm.Start(t, "streaming:\n  chunkSize: 8\n  chunkIntervalMs: 1\n"))
	turn := &projector.Turn{Conversation: "mock", Blocks: []events.Block{
		{ID: "s", Kind: events.KindSystem, Text: "You are an echo.", Trust: events.Trusted},
		{ID: "u1", Kind: events.KindUser, Text: "count <these> & \"those\""},
		{ID: "r", Kind: events.KindReasoning, Text: "a tool does that"},
		{ID: "a1", Kind: events.KindLLMText, Text: "Counting."},
		{ID: "c1", Kind: events.KindToolCall, CallID: "call_1", ToolName: "lookup", Arguments: `{"q": "x"}`},
		{ID: "t1", Kind: events.KindToolResult, CallID: "call_1", Text: "2"},
		{ID: "u2", Kind: events.KindUser, Text: "echo me"},
	}}
	for i, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e, err := openai.New(openai.Config{BaseURL: tap.URL + "/v1", APIKey: "mock-key", Model: "mock-model", Stream: stream})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			wctx, rec := engine.WithWireRecorder(ctx, false)
			out, err := e.Infer(wctx, engine.Input{Turn: turn, Tools: testTools}, nil)
			require.NoError(t, err)
			assert.Equal(t, "echo me", out.Blocks[0].Text)

			bodies := tap.Bodies()
			require.Len(t, bodies, i+1)
			assert.Equal(t, 1, rec.Sent())
			notes := providertest.RenderedAgain(t, fmt.Sprintf("call %d", i+1), bodies[i], rec.Wire(), openai.WireVersion, openai.RenderWire, turn)
			assert.Contains(t, notes, engine.BlockNote{Index: 2, ID: "r", Sent: false, Note: "not sent: Chat Completions has no input for reasoning"})
			assert.Contains(t, notes, engine.BlockNote{Index: 4, ID: "c1", Sent: true,
				Note: "merged into the assistant message of block 3 (a1): a model turn's text and tool calls are one message"})
			assert.Len(t, notes, 2)
		})
	}
}
