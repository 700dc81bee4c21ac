package middlewares_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
)

// turnForUnits is a Turn with a reasoning block and its follower, and a
// tool call with its result: units [u1] [r1 l1] [c1 t1] [u2].
func turnForUnits() []events.Block {
	return []events.Block{
		{ID: "u1", Kind: events.KindUser, Text: "hi"},
		{ID: "r1", Kind: events.KindReasoning, Text: "think"},
		{ID: "l1", Kind: events.KindLLMText, Text: "hello"},
		{ID: "c1", Kind: events.KindToolCall, CallID: "k", ToolName: "lookup"},
		{ID: "t1", Kind: events.KindToolResult, CallID: "k", Text: "found"},
		{ID: "u2", Kind: events.KindUser, Text: "more"},
	}
}

func blockIDs(bs []events.Block) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.ID)
	}
	return out
}

func TestUnits(t *testing.T) {
	assert.Equal(t, []middlewares.Unit{{0, 1}, {1, 3}, {3, 5}, {5, 6}}, middlewares.Units(turnForUnits()))
	assert.Empty(t, middlewares.Units(nil))
}

func TestMoveUnit(t *testing.T) {
	cases := []struct {
		name, id, before string
		want             []string // nil: no event
		wantErr          string
	}{
		{name: "a reasoning block moves with its follower", id: "r1", before: "u1", want: []string{"r1", "l1", "u1", "c1", "t1", "u2"}},
		{name: "named by its follower", id: "l1", before: "", want: []string{"u1", "c1", "t1", "u2", "r1", "l1"}},
		{name: "a tool call with its result", id: "t1", before: "r1", want: []string{"u1", "c1", "t1", "r1", "l1", "u2"}},
		{name: "there already", id: "c1", before: "u2"},
		{name: "at the end already", id: "u2", before: ""},
		{name: "before its own unit", id: "r1", before: "l1", wantErr: "are in the same unit"},
		{name: "a block the turn lacks", id: "zz", before: "", wantErr: `block "zz" is not in the turn`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tx := txOf(t, turnForUnits()...)
			err := middlewares.MoveUnit(tx, "test", tc.id, tc.before, "why")
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Empty(t, tx.Pending())
				return
			}
			require.NoError(t, err)
			if tc.want == nil {
				assert.Empty(t, tx.Pending(), "nothing to record")
				return
			}
			require.Len(t, tx.Pending(), 1)
			assert.Equal(t, events.BlocksReordered{Order: tc.want, Reason: "why"}, tx.Pending()[0].Payload)
			assert.Equal(t, tc.want, blockIDs(tx.Turn().Blocks))
		})
	}
}

func TestInsertBlock(t *testing.T) {
	cases := []struct {
		name    string
		index   int
		want    []string
		wantErr string
	}{
		{name: "at the front", index: 0, want: []string{"n", "u1", "r1", "l1", "c1", "t1", "u2"}},
		{name: "between units", index: 3, want: []string{"u1", "r1", "l1", "n", "c1", "t1", "u2"}},
		{name: "at the end", index: 6, want: []string{"u1", "r1", "l1", "c1", "t1", "u2", "n"}},
		{name: "between a reasoning block and its follower", index: 2, wantErr: "index 2 is inside the unit of blocks 1 to 2 ([reasoning llm_text]), which must stay together; insert at 1 or 3"},
		{name: "between a tool call and its result", index: 4, wantErr: "insert at 3 or 5"},
		{name: "past the end", index: 7, wantErr: "index 7 is outside the turn (0 to 6)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tx := txOf(t, turnForUnits()...)
			err := middlewares.InsertBlock(tx, "test", tc.index, events.Block{ID: "n", Kind: events.KindOther, Text: "note"}, "why")
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Empty(t, tx.Pending())
				return
			}
			require.NoError(t, err)
			require.Len(t, tx.Pending(), 1)
			assert.Equal(t, events.TypeBlockInserted, tx.Pending()[0].Type)
			assert.Equal(t, "test", tx.Pending()[0].Actor)
			assert.Equal(t, tc.want, blockIDs(tx.Turn().Blocks))
		})
	}

	tx := txOf(t, turnForUnits()...)
	require.NoError(t, middlewares.InsertBlock(tx, "test", 0, events.Block{Kind: events.KindUser, Text: "no ID"}, ""))
	assert.NotEmpty(t, tx.Turn().Blocks[0].ID, "a block without an ID gets a fresh one")
}
