package middlewares_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
)

func TestReasoningGuard(t *testing.T) {
	tests := []struct {
		name   string
		blocks []events.Block
		// orphan is the error's block ID and index ("" when valid).
		orphan, index string
		// removed and reasons are what repair emits, in order.
		removed []string
		reasons []string
	}{
		{
			name:   "followed by text or a tool call: valid",
			blocks: []events.Block{user("u1", "q"), reasoning("r1"), llm("a1", "a"), user("u2", "q"), reasoning("r2"), call("c2", "k"), result("t2", "k")},
		},
		{
			name:    "followed by a user block",
			blocks:  []events.Block{user("u1", "q"), reasoning("r1"), user("u2", "q")},
			orphan:  "r1",
			index:   "index 1",
			removed: []string{"r1"},
			reasons: []string{"reasoning block without follower at index 1 (followed by a user block)"},
		},
		{
			name:    "at the end",
			blocks:  []events.Block{user("u1", "q"), llm("a1", "a"), reasoning("r9")},
			orphan:  "r9",
			index:   "index 2",
			removed: []string{"r9"},
			reasons: []string{"reasoning block without follower at index 2 (followed by nothing)"},
		},
		{
			name:    "two in a row, and a tool result",
			blocks:  []events.Block{user("u1", "q"), reasoning("r1"), reasoning("r2"), llm("a", "x"), call("c", "k"), reasoning("r3"), result("t", "k")},
			orphan:  "r1",
			index:   "index 1",
			removed: []string{"r3", "r1"},
			reasons: []string{
				"reasoning block without follower at index 5 (followed by a tool_result block)",
				"reasoning block without follower at index 1 (followed by a reasoning block)",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/fail", func(t *testing.T) {
			mw := middlewares.Must(middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{}))
			called, evs, err := run(t, mw, txOf(t, tc.blocks...))
			assert.Empty(t, evs, "failing emits nothing")
			if tc.orphan == "" {
				assert.NoError(t, err)
				assert.True(t, called)
				return
			}
			assert.ErrorIs(t, err, middlewares.ErrOrphanReasoning)
			assert.ErrorContains(t, err, "block "+tc.orphan+" at "+tc.index)
			assert.False(t, called, "the model is not called with an input it would reject")
		})
		t.Run(tc.name+"/repair", func(t *testing.T) {
			mw := middlewares.Must(middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{Repair: true}))
			tx := txOf(t, tc.blocks...)
			first, second := runTwice(t, mw, tx)
			assert.Empty(t, second)
			var removed, reasons []string
			for _, e := range first {
				require.Equal(t, events.TypeBlocksRemoved, e.Type)
				assert.Equal(t, middlewares.ActorReasoningGuard, e.Actor)
				p := e.Payload.(events.BlocksRemoved)
				removed = append(removed, p.BlockIDs...)
				reasons = append(reasons, p.Reason)
			}
			assert.Equal(t, tc.removed, removed)
			assert.Equal(t, tc.reasons, reasons)
			for _, b := range tx.Turn().Blocks {
				assert.NotContains(t, tc.removed, b.ID)
			}
			assert.Len(t, tx.Turn().Blocks, len(tc.blocks)-len(tc.removed), "only orphans are removed")
		})
	}
}
