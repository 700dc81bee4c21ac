package responses_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/responses"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/projector"
)

// TestWireMatchesWhatTheServerReceived: through a tool loop whose
// reasoning goes back, each call's recorded hash is that of the bytes the
// rule-checking server read from the connection, and RenderWire makes
// those bytes again from the recorded parameters and the Turn; a
// reasoning block of another provider is shown as not sent.
func TestWireMatchesWhatTheServerReceived(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := providertest.NewResponses(t, weatherReplies)
			e, err := responses.New(responses.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "o4-mini", Stream: stream,
				MaxOutputTokens: 900, ReasoningEffort: "low", ReasoningSummary: "auto"})
			require.NoError(t, err)
			turn := &projector.Turn{Conversation: "c", Blocks: []events.Block{
				{ID: "s", Kind: events.KindSystem, Text: "Be brief.", Trust: events.Trusted},
				{ID: "x", Kind: events.KindReasoning, Text: "another provider's thought"},
				{ID: "u", Kind: events.KindUser, Text: "Weather in <Paris>?"},
			}}
			for call := range 2 {
				ctx, rec := engine.WithWireRecorder(context.Background(), false)
				out, err := e.Infer(ctx, engine.Input{Turn: turn, Tools: weatherTool}, nil)
				require.NoError(t, err)
				reqs := srv.Requests()
				require.Len(t, reqs, call+1)
				notes := providertest.RenderedAgain(t, fmt.Sprintf("call %d", call+1), reqs[call].Raw, rec.Wire(),
					responses.WireVersion, responses.RenderWire, turn)
				assert.Equal(t, []engine.BlockNote{{Index: 1, ID: "x", Sent: false,
					Note: "not sent: no reasoning item ID and encrypted content from the Responses API, so the API could not verify it"}}, notes)

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
