package middlewares_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
)

// TestReasoningGuardNamesWhatMovedBlocks: an orphan that a middleware
// before the guard made in the same step is not in the log (a worker
// stores nothing of a failed step), so `turnlog repair` finds nothing to
// remove. The error names the step's events that moved or removed blocks,
// and says to fix that middleware, before the repair advice; an orphan no
// such event can have made keeps the repair advice alone.
func TestReasoningGuardNamesWhatMovedBlocks(t *testing.T) {
	tests := []struct {
		name   string
		blocks []events.Block
		// before emits in the step, ahead of the guard.
		before  func(tx *engine.Tx) error
		want    []string
		notWant []string
	}{
		{name: "moved to the end by a middleware of one's own",
			blocks: []events.Block{user("u1", "q"), reasoning("r1"), llm("a1", "a"), user("u2", "q")},
			before: func(tx *engine.Tx) error {
				return tx.Emit("acme.compact", events.BlocksReordered{Order: []string{"u1", "a1", "u2", "r1"}, Reason: "oops"})
			},
			want: []string{
				`reasoning block without its follower; blocks.reordered of "acme.compact" changed the order of the blocks in this step (moved, removed, inserted or split them), before this guard: if that left it so, fix that middleware`,
				"middlewares.MoveUnit",
				"; else remove it once with `turnlog repair --yes c`",
			},
		},
		{name: "its follower removed by a middleware of one's own",
			blocks: []events.Block{user("u1", "q"), reasoning("r1"), llm("a1", "a"), user("u2", "q")},
			before: func(tx *engine.Tx) error {
				return tx.Emit("acme.trim", events.BlocksRemoved{BlockIDs: []string{"a1"}, Reason: "trim"})
			},
			want: []string{`blocks.removed of "acme.trim" changed the order of the blocks in this step`},
		},
		{name: "stored so: nothing in this step moved or removed a block",
			blocks: []events.Block{user("u1", "q"), llm("a0", "a"), reasoning("r1"), user("u2", "q")},
			before: func(tx *engine.Tx) error {
				return tx.Emit("acme.prompt", events.SystemPromptSet{BlockID: "s", Text: "be brief", Trust: events.Trusted})
			},
			want:    []string{"reasoning block without its follower; remove it once with `turnlog repair --yes c`"},
			notWant: []string{"acme.prompt"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tx := txOf(t, tc.blocks...)
			require.NoError(t, tc.before(tx))
			mw := middlewares.Must(middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{}))
			err := mw(func(context.Context, *engine.Tx) error { return nil })(context.Background(), tx)
			require.ErrorIs(t, err, middlewares.ErrOrphanReasoning)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, err.Error(), w)
			}
		})
	}
}
