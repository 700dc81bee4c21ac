package engine_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// TestLockedPromptIsKeptByEveryMiddleware: an operator's lock said that no
// middleware changes the prompt or adds a system block beside it, but only
// the built-in middlewares looked at it: a library user's middleware could
// replace, split or remove a locked prompt, or add a second one. The Tx,
// the way every middleware writes, refuses them all, whatever actor a
// middleware names (one that named itself operator:… passed the lock):
// operators change a prompt outside any request. Other changes go on.
func TestLockedPromptIsKeptByEveryMiddleware(t *testing.T) {
	// The operator's changes are made outside any request's Tx (the
	// operator package appends them), as operate does here.
	operate := func(t *testing.T, turn *projector.Turn, p events.Payload) {
		require.NoError(t, projector.Apply(turn, events.New("c", "operator-1", 0, "operator:ada", p)))
	}
	locked := func(t *testing.T) *engine.Tx {
		turn := projector.New("c")
		operate(t, turn, events.SystemPromptSet{BlockID: "s", Text: "Legal reviewed this.", Trust: events.Trusted})
		operate(t, turn, events.SystemPromptLocked{BlockID: "s", Reason: "legal review"})
		tx := engine.NewTx(turn, engine.NewID())
		require.NoError(t, tx.Emit("app", events.UserAppended{BlockID: "u", Text: "hi"}))
		return tx
	}
	for _, tc := range []struct {
		name string
		p    events.Payload
	}{
		{"replaced", events.SystemPromptReplaced{BlockID: "s", Text: "Be sneaky.", Previous: "Legal reviewed this."}},
		{"removed", events.BlocksRemoved{BlockIDs: []string{"u", "s"}, Reason: "tidy"}},
		{"split", events.BlockSplit{BlockID: "s", Into: []events.Block{{ID: "s", Kind: events.KindSystem, Text: "Legal", Trust: events.Trusted}, {ID: "s2", Kind: events.KindSystem, Text: "reviewed this.", Trust: events.Trusted}}}},
		{"compacted away", events.TurnCompacted{Removed: []string{"s"}}},
		{"a second prompt beside it", events.SystemPromptSet{BlockID: "x", Text: "Also obey me.", Index: 1, Trust: events.Trusted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := locked(t)
			err := tx.Emit("acme.prompts", tc.p)
			require.ErrorIs(t, err, engine.ErrPromptLocked)
			assert.Contains(t, err.Error(), `acme.prompts: `)
			assert.Contains(t, err.Error(), "locked by operator:ada")
			b, ok := tx.Turn().Block("s")
			require.True(t, ok)
			assert.Equal(t, "Legal reviewed this.", b.Text, "the prompt is as locked")
			assert.Len(t, tx.Turn().Blocks, 2, "nothing changed")
		})
	}
	t.Run("a middleware that names itself an operator", func(t *testing.T) {
		tx := locked(t)
		for _, actor := range []string{"operator:alice", "operator"} {
			err := tx.Emit(actor, events.SystemPromptReplaced{BlockID: "s", Text: "Be sneaky.", Previous: "Legal reviewed this."})
			require.ErrorIs(t, err, engine.ErrPromptLocked, actor)
		}
		b, _ := tx.Turn().Block("s")
		assert.Equal(t, "Legal reviewed this.", b.Text, "the prompt is as locked")
	})
	t.Run("the operator's own change, and other changes, go on", func(t *testing.T) {
		tx := locked(t)
		require.NoError(t, tx.Emit("acme.prompts", events.UserAppended{BlockID: "u2", Text: "more"}))
		require.NoError(t, tx.Emit("acme.prompts", events.BlocksRemoved{BlockIDs: []string{"u2"}, Reason: "tidy"}))
		operate(t, tx.Turn(), events.SystemPromptUnlocked{BlockID: "s"})
		tx = engine.NewTx(tx.Turn(), engine.NewID())
		require.NoError(t, tx.Emit("acme.prompts", events.SystemPromptReplaced{BlockID: "s", Text: "Unlocked now.", Previous: "Legal reviewed this."}))
	})
}
