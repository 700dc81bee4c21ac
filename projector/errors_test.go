package projector_test

import (
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// TestApplyRejectsAndLeavesTheTurnAsItWas checks the fold's error contract:
// an event it rejects returns an error wrapping the right sentinel and
// leaves the Turn exactly as it was, position included.
func TestApplyRejectsAndLeavesTheTurnAsItWas(t *testing.T) {
	with := func(p events.Payload, change func(*events.Event)) events.Event {
		e := ev(p)
		change(&e)
		return e
	}
	user := events.UserAppended{BlockID: "new", Text: "x"}
	tests := []struct {
		name     string
		turn     func(t testing.TB) *projector.Turn // nil: base
		event    events.Event
		wantIs   []error
		wantText string
	}{
		// Envelope.
		{name: "unknown type", event: with(user, func(e *events.Event) { e.Type = "nope.happened" }),
			wantIs: []error{events.ErrUnknownEvent}, wantText: `"nope.happened"`},
		{name: "newer version", event: with(user, func(e *events.Event) { e.Version = 2 }),
			wantIs: []error{events.ErrNewerVersion}, wantText: "knows up to 1"},
		{name: "invalid envelope", event: with(user, func(e *events.Event) { e.ID = ulid.ULID{} }),
			wantIs: []error{events.ErrInvalid}, wantText: "field id"},
		{name: "version 0", event: with(user, func(e *events.Event) { e.Version = 0 }),
			wantIs: []error{events.ErrInvalid}, wantText: "field version"},
		{name: "invalid payload", event: ev(events.UserAppended{Text: "no ID"}),
			wantIs: []error{events.ErrInvalid}, wantText: "payload.block_id"},
		{name: "payload of another type", event: with(user, func(e *events.Event) { e.Type = events.TypeLLMTextAppended }),
			wantIs: []error{events.ErrInvalid}, wantText: "user.appended payload in a llm_text.appended event"},
		{name: "nil payload", event: with(user, func(e *events.Event) { e.Payload = nil }), wantIs: []error{events.ErrInvalid}},
		{name: "another conversation", event: with(user, func(e *events.Event) { e.Conversation = "other" }),
			wantIs: []error{projector.ErrMismatch}, wantText: `"other"`},

		// Appends whose ID is taken.
		{name: "user with a taken ID", event: ev(events.UserAppended{BlockID: "u1"}), wantIs: []error{projector.ErrDuplicateBlock}, wantText: "u1"},
		{name: "llm text with a taken ID", event: ev(events.LLMTextAppended{BlockID: "s1"}), wantIs: []error{projector.ErrDuplicateBlock}},
		{name: "reasoning with a taken ID", event: ev(events.ReasoningAppended{BlockID: "l1"}), wantIs: []error{projector.ErrDuplicateBlock}},
		{name: "tool call with a taken ID", event: ev(events.ToolCalled{BlockID: "t2", CallID: "c", Name: "n"}), wantIs: []error{projector.ErrDuplicateBlock}},
		{name: "tool result with a taken ID", event: ev(events.ToolResult{BlockID: "t1", CallID: "c"}), wantIs: []error{projector.ErrDuplicateBlock}},
		{name: "system prompt at the front with a taken ID", event: ev(events.SystemPromptSet{BlockID: "l1"}), wantIs: []error{projector.ErrDuplicateBlock}},
		{name: "system prompt at the end with a taken ID", event: ev(events.SystemPromptSet{BlockID: "u1", Index: 6}), wantIs: []error{projector.ErrDuplicateBlock}},
		{name: "system prompt past the end", event: ev(events.SystemPromptSet{BlockID: "s9", Index: 7}),
			wantIs: []error{projector.ErrMismatch}, wantText: "index 7, but the turn has 6 blocks"},

		// System prompt replacement.
		{name: "replace with the wrong previous text", event: ev(events.SystemPromptReplaced{BlockID: "s1", Previous: "be BRIEF", Text: "x"}),
			wantIs: []error{projector.ErrMismatch}, wantText: "previous text"},
		{name: "replace a user block", event: ev(events.SystemPromptReplaced{BlockID: "u1", Previous: "hello", Text: "x"}),
			wantIs: []error{projector.ErrMismatch}, wantText: "is user, not system"},
		{name: "replace a missing block", event: ev(events.SystemPromptReplaced{BlockID: "nope", Previous: "be brief", Text: "x"}),
			wantIs: []error{projector.ErrMissingBlock}, wantText: "nope"},

		// Locks.
		{name: "lock a user block", event: ev(events.SystemPromptLocked{BlockID: "u1"}),
			wantIs: []error{projector.ErrMismatch}, wantText: "only system blocks are locked"},
		{name: "lock a missing block", event: ev(events.SystemPromptLocked{BlockID: "nope"}), wantIs: []error{projector.ErrMissingBlock}},
		{name: "unlock a block that is not locked", event: ev(events.SystemPromptUnlocked{BlockID: "s1"}),
			wantIs: []error{projector.ErrMismatch}, wantText: "is not locked"},
		{name: "lock a locked block", turn: func(t testing.TB) *projector.Turn {
			turn := base(t)
			require.NoError(t, projector.Apply(turn, ev(events.SystemPromptLocked{BlockID: "s1"})))
			return turn
		}, event: ev(events.SystemPromptLocked{BlockID: "s1"}), wantIs: []error{projector.ErrMismatch}, wantText: `already locked (by "test")`},

		// Reorder.
		{name: "reorder with a missing ID", event: ev(events.BlocksReordered{Order: []string{"s1", "u1", "r1", "t1", "t2", "nope"}}),
			wantIs: []error{projector.ErrBadOrder, projector.ErrMissingBlock}, wantText: "nope"},
		{name: "reorder with a duplicate ID", event: ev(events.BlocksReordered{Order: []string{"s1", "u1", "r1", "t1", "t2", "u1"}}),
			wantIs: []error{projector.ErrBadOrder}, wantText: "u1 listed twice"},
		{name: "reorder with a block left out", event: ev(events.BlocksReordered{Order: []string{"s1", "u1", "r1", "t1", "t2"}}),
			wantIs: []error{projector.ErrBadOrder}, wantText: "lists 5 IDs, the turn has 6 blocks"},
		{name: "reorder with a block too many", event: ev(events.BlocksReordered{Order: []string{"s1", "u1", "r1", "t1", "t2", "l1", "l1"}}),
			wantIs: []error{projector.ErrBadOrder}},
		{name: "reorder an empty list on a full turn", event: ev(events.BlocksReordered{}), wantIs: []error{projector.ErrBadOrder}},

		// Remove, annotate.
		{name: "remove a missing block", event: ev(events.BlocksRemoved{BlockIDs: []string{"u1", "nope"}, Reason: "x"}),
			wantIs: []error{projector.ErrMissingBlock}, wantText: "block_ids"},
		{name: "remove a block twice", event: ev(events.BlocksRemoved{BlockIDs: []string{"u1", "u1"}, Reason: "x"}),
			wantIs: []error{projector.ErrMismatch}, wantText: "listed twice"},
		{name: "annotate a missing block", event: ev(events.BlockAnnotated{BlockID: "nope", Meta: map[string]string{"a": "b"}}),
			wantIs: []error{projector.ErrMissingBlock}},

		// Split.
		{name: "split a missing block", event: ev(events.BlockSplit{BlockID: "nope", Into: []events.Block{{ID: "x", Kind: events.KindUser}}}),
			wantIs: []error{projector.ErrMissingBlock}},
		{name: "split into another block's ID", event: ev(events.BlockSplit{BlockID: "s1", Into: []events.Block{{ID: "x", Kind: events.KindUser}, {ID: "u1", Kind: events.KindUser}}}),
			wantIs: []error{projector.ErrDuplicateBlock}, wantText: "u1"},
		{name: "split into the same new ID twice", event: ev(events.BlockSplit{BlockID: "s1", Into: []events.Block{{ID: "x", Kind: events.KindUser}, {ID: "x", Kind: events.KindUser}}}),
			wantIs: []error{projector.ErrDuplicateBlock}},
		{name: "split into its own ID twice", event: ev(events.BlockSplit{BlockID: "s1", Into: []events.Block{{ID: "s1", Kind: events.KindUser}, {ID: "s1", Kind: events.KindUser}}}),
			wantIs: []error{projector.ErrDuplicateBlock}},
		{name: "split into an invalid block", event: ev(events.BlockSplit{BlockID: "s1", Into: []events.Block{{ID: "x", Kind: "bogus"}}}),
			wantIs: []error{events.ErrInvalid}, wantText: "payload.into[0].kind"},

		// Compaction.
		{name: "compact a missing block", event: ev(events.TurnCompacted{Removed: []string{"u1", "nope"}}),
			wantIs: []error{projector.ErrMissingBlock}, wantText: "removed"},
		{name: "compact a block twice", event: ev(events.TurnCompacted{Removed: []string{"u1", "u1"}}), wantIs: []error{projector.ErrMismatch}},
		{name: "summary with a kept block's ID", event: ev(events.TurnCompacted{Removed: []string{"u1"}, Summary: &events.Block{ID: "l1", Kind: events.KindOther}}),
			wantIs: []error{projector.ErrDuplicateBlock}, wantText: "summary"},

		// Forks.
		{name: "fork into a turn with blocks", event: ev(events.ConversationStarted{Blocks: []events.Block{{ID: "x", Kind: events.KindUser}}}),
			wantIs: []error{projector.ErrMismatch}, wantText: "must come before any other content"},
		{name: "fork data into a turn with data", turn: func(t testing.TB) *projector.Turn {
			return build(t, events.DataSet{Values: map[string]string{"a": "1"}})
		},
			event: ev(events.ConversationStarted{Data: map[string]string{"b": "2"}}), wantIs: []error{projector.ErrMismatch}},
		{name: "fork blocks into a turn with data", turn: func(t testing.TB) *projector.Turn {
			return build(t, events.DataSet{Values: map[string]string{"a": "1"}})
		},
			event: ev(events.ConversationStarted{Blocks: []events.Block{{ID: "x", Kind: events.KindUser}}}), wantIs: []error{projector.ErrMismatch}},
		{name: "fork with duplicate block IDs", turn: func(testing.TB) *projector.Turn { return projector.New(conv) },
			event:  ev(events.ConversationStarted{Blocks: []events.Block{{ID: "x", Kind: events.KindUser}, {ID: "y", Kind: events.KindUser}, {ID: "x", Kind: events.KindLLMText}}}),
			wantIs: []error{projector.ErrDuplicateBlock}, wantText: "x"},
		{name: "fork with an invalid block", turn: func(testing.TB) *projector.Turn { return projector.New(conv) },
			event:  ev(events.ConversationStarted{Blocks: []events.Block{{ID: "x", Kind: events.KindToolResult}}}),
			wantIs: []error{events.ErrInvalid}, wantText: "payload.blocks[0].call_id"},

		// A Turn that has not seen any event yet.
		{name: "reorder of an empty turn that names a block", turn: func(testing.TB) *projector.Turn { return projector.New(conv) },
			event: ev(events.BlocksReordered{Order: []string{"x"}}), wantIs: []error{projector.ErrBadOrder}},
		{name: "replace in an empty turn", turn: func(testing.TB) *projector.Turn { return projector.New(conv) },
			event: ev(events.SystemPromptReplaced{BlockID: "s"}), wantIs: []error{projector.ErrMissingBlock}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mk := tc.turn
			if mk == nil {
				mk = base
			}
			turn := mk(t)
			before := turn.Clone()
			beforeState := stateOf(turn)
			hash := projector.Hash(turn)

			err := projector.Apply(turn, tc.event)
			require.Error(t, err)
			for _, want := range tc.wantIs {
				assert.ErrorIs(t, err, want)
			}
			assert.Contains(t, err.Error(), tc.wantText)
			assert.Contains(t, err.Error(), "apply event ", "the error names the event's position")
			assert.Contains(t, err.Error(), string(tc.event.Type))

			assert.Equal(t, beforeState, stateOf(turn), "a rejected event changed the turn")
			assertSameTurn(t, before, turn)
			assert.Equal(t, hash, projector.Hash(turn))

			// The Turn still works: lookups are right and the next valid
			// event applies on top of the untouched state.
			for i, b := range turn.Blocks {
				assert.Equal(t, i, turn.Index(b.ID))
			}
			require.NoError(t, projector.Apply(turn, ev(events.UserAppended{BlockID: "after-" + ulid.Make().String()})))
			assert.Equal(t, beforeState.Events+1, turn.Events)
		})
	}
}

func TestApplyErrorNamesThePosition(t *testing.T) {
	turn := base(t)
	err := projector.Apply(turn, ev(events.UserAppended{BlockID: "u1"}))
	require.Error(t, err)
	assert.Equal(t, "apply event 8 (user.appended): block ID already in the turn: u1", err.Error())
}
