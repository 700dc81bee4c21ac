package openai_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/openai"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/mockllm"
	"github.com/turnlog/turnlog/projector"
)

// TestMockLLMEcho runs the engine against a Chat Completions server that
// someone else wrote (see internal/mockllm), so that our reading of the
// protocol is checked by a second implementation and not only by our own
// fake. mock-llm's default rule answers with the content of the request's
// LAST message, finish_reason "stop", no usage; with "stream": true it
// sends the same content as SSE chunks of streaming.chunkSize characters.
func TestMockLLMEcho(t *testing.T) {
	baseURL := mockllm.Start(t, "streaming:\n  chunkSize: 8\n  chunkIntervalMs: 1\n")
	const last = "hello from turnlog, echo me back in pieces"
	turn := &projector.Turn{Conversation: "mock", Blocks: []events.Block{
		{ID: "s", Kind: events.KindSystem, Text: "You are an echo.", Trust: events.Trusted},
		{ID: "u1", Kind: events.KindUser, Text: "first"},
		{ID: "r", Kind: events.KindReasoning, Text: "not sent"},
		{ID: "a1", Kind: events.KindLLMText, Text: "first"},
		{ID: "u2", Kind: events.KindUser, Text: last},
	}}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e, err := openai.New(openai.Config{BaseURL: baseURL + "/v1", APIKey: "mock-key", Model: "mock-model", Stream: stream})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			var deltas []string
			out, err := e.Infer(ctx, engine.Input{Turn: turn, Tools: testTools}, func(d engine.Delta) {
				assert.Equal(t, events.KindLLMText, d.Kind)
				deltas = append(deltas, d.Text)
			})
			require.NoError(t, err)
			assert.Equal(t, []events.Block{{Kind: events.KindLLMText, Text: last}}, out.Blocks)
			assert.Equal(t, "stop", out.StopReason)
			assert.Equal(t, last, strings.Join(deltas, ""))
			if stream {
				// chunkSize 8 (see above): the text arrives in pieces.
				assert.Greater(t, len(deltas), 3, "got deltas %q, want the text in several chunks", deltas)
			}
		})
	}
}
