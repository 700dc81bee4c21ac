package anthropic_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/anthropic"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/projector"
)

// TestWireMatchesWhatTheServerReceived: through a tool loop whose thinking
// goes back, each call's recorded hash is that of the bytes the
// rule-checking server read from the connection, and RenderWire makes
// those bytes again from the recorded parameters and the Turn, noting
// where the system prompt went and what was merged or not sent.
func TestWireMatchesWhatTheServerReceived(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := providertest.NewMessages(t, weatherReplies)
			e := newEngine(t, srv.URL, stream)
			turn := &projector.Turn{Conversation: "c", Blocks: []events.Block{
				{ID: "s", Kind: events.KindSystem, Text: "Be brief.", Trust: events.Trusted},
				{ID: "u", Kind: events.KindUser, Text: "Weather in <Paris>?"},
				{ID: "x", Kind: events.KindReasoning, Text: "another provider's thought"},
			}}
			turn.Blocks = append(turn.Blocks, events.Block{ID: "u2", Kind: events.KindUser, Text: "Now, please."})
			for call := range 2 {
				ctx, rec := engine.WithWireRecorder(context.Background(), false)
				out, err := e.Infer(ctx, engine.Input{Turn: turn, Tools: weatherTool}, nil)
				require.NoError(t, err)
				reqs := srv.Requests()
				require.Len(t, reqs, call+1)
				notes := providertest.RenderedAgain(t, fmt.Sprintf("call %d", call+1), reqs[call].Raw, rec.Wire(),
					anthropic.WireVersion, anthropic.RenderWire, turn)
				require.GreaterOrEqual(t, len(notes), 3)
				assert.Equal(t, engine.BlockNote{Index: 0, ID: "s", Sent: true, Note: "sent in the request's top-level system field, not among the messages"}, notes[0])
				assert.Equal(t, engine.BlockNote{Index: 2, ID: "x", Sent: false, Note: "not sent: not thinking from the Messages API, so there is no signature the API could verify"}, notes[1])
				assert.Equal(t, engine.BlockNote{Index: 3, ID: "u2", Sent: true, Note: "merged into the user message of block 1 (u): the Messages API alternates user and assistant messages"}, notes[2])

				appendOutput(turn, out)
				for _, b := range out.Blocks {
					if b.Kind == events.KindToolCall {
						turn.Blocks = append(turn.Blocks, events.Block{ID: engine.NewID(), Kind: events.KindToolResult, CallID: b.CallID, Text: "21C"})
					}
				}
			}
			assert.Empty(t, srv.Violations())
		})
	}
}
