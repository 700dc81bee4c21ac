package middlewares_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
)

func TestOrdering(t *testing.T) {
	section := func(b events.Block, s string) events.Block {
		if b.Meta == nil {
			b.Meta = map[string]string{}
		}
		b.Meta[events.MetaSection] = s
		return b
	}
	tests := []struct {
		name   string
		blocks []events.Block
		want   []string // IDs after the run; nil: no event
	}{
		{
			name:   "already ordered: nothing",
			blocks: []events.Block{sys("s", "p"), section(user("ctx", "profile"), "user_context"), user("u1", "hi"), reasoning("r1"), llm("a1", "hello")},
		},
		{
			name:   "empty turn: nothing",
			blocks: nil,
		},
		{
			name:   "a system block moves to the front",
			blocks: []events.Block{user("u1", "hi"), llm("a1", "hello"), sys("s", "p")},
			want:   []string{"s", "u1", "a1"},
		},
		{
			name: "a later system message (an imported developer message) stays where it is",
			blocks: []events.Block{sys("s", "p"), user("u1", "hi"), llm("a1", "hello"), sys("d", "now in French"), user("u2", "et ?"),
				section(user("ctx", "profile"), "user_context")},
			want: []string{"s", "ctx", "u1", "a1", "d", "u2"},
		},
		{
			name:   "a later system message already in place: nothing",
			blocks: []events.Block{sys("s", "p"), sys("g", "policy", events.MetaSection, "system"), user("u1", "hi"), sys("d", "dev"), user("u2", "et ?")},
		},
		{
			name: "sections in order, stable within a section",
			blocks: []events.Block{
				section(user("post", "remember"), "post_conversation"),
				user("u1", "hi"),
				section(user("team", "team doc"), "team_context"),
				section(user("ctx", "profile"), "user_context"),
				sys("s", "p"),
				llm("a1", "hello"),
				section(sys("g", "policy"), "system"),
			},
			want: []string{"s", "g", "ctx", "team", "u1", "a1", "post"},
		},
		{
			name: "an unknown section counts as none",
			blocks: []events.Block{
				section(user("x", "?"), "nonsense"),
				section(user("ctx", "profile"), "user_context"),
			},
			want: []string{"ctx", "x"},
		},
		{
			name: "a reasoning block moves with its follower",
			blocks: []events.Block{
				user("u1", "hi"),
				reasoning("r1"),
				section(llm("a1", "context the model wrote"), "user_context"),
			},
			want: []string{"r1", "a1", "u1"},
		},
		{
			name: "a tool call moves with its result, and what is between them",
			blocks: []events.Block{
				section(user("post", "remember"), "post_conversation"),
				user("u1", "count"),
				reasoning("r1"),
				call("c1", "k1"),
				call("c2", "k2"),
				result("t1", "k1"),
				result("t2", "k2"),
				llm("a1", "done"),
			},
			want: []string{"u1", "r1", "c1", "c2", "t1", "t2", "a1", "post"},
		},
		{
			name: "a context block between a call and its result cannot escape",
			blocks: []events.Block{
				user("u1", "count"),
				call("c1", "k1"),
				section(user("ctx", "profile"), "user_context"),
				result("t1", "k1"),
			},
		},
		{
			name:   "a reasoning block moves with whatever follows it",
			blocks: []events.Block{user("u1", "hi"), reasoning("r1"), sys("s", "p")},
			want:   []string{"r1", "s", "u1"},
		},
		{
			name:   "a trailing reasoning block is its own unit",
			blocks: []events.Block{section(user("post", "remember"), "post_conversation"), user("u1", "hi"), reasoning("r1")},
			want:   []string{"u1", "r1", "post"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw := middlewares.Must(middlewares.Ordering(middlewares.OrderingConfig{}))
			tx := txOf(t, tc.blocks...)
			first, second := runTwice(t, mw, tx)
			assert.Empty(t, second, "ordered blocks are not reordered again")
			if tc.want == nil {
				assert.Empty(t, first)
				assert.Equal(t, idsOf(tc.blocks), idsOf(tx.Turn().Blocks))
				return
			}
			if assert.Len(t, first, 1) {
				assert.Equal(t, events.TypeBlocksReordered, first[0].Type)
				assert.Equal(t, middlewares.ActorOrdering, first[0].Actor)
			}
			assert.Equal(t, tc.want, idsOf(tx.Turn().Blocks))
			assertUnitsIntact(t, tx.Turn().Blocks)
		})
	}
}

// assertUnitsIntact checks the adjacency rules: every reasoning block
// not at the end is followed by what followed it before (text or a call),
// and every tool result comes after its call.
func assertUnitsIntact(t *testing.T, blocks []events.Block) {
	t.Helper()
	calls := map[string]int{}
	for i, b := range blocks {
		switch b.Kind {
		case events.KindToolCall:
			calls[b.CallID] = i
		case events.KindToolResult:
			j, ok := calls[b.CallID]
			assert.True(t, ok && j < i, "result %s at %d has no call before it", b.ID, i)
		}
	}
}

func TestOrderingConfigValidate(t *testing.T) {
	tests := []struct {
		name     string
		sections []string
		wantErr  string
	}{
		{"default", nil, ""},
		{"custom", []string{"system", "conversation", "tail"}, ""},
		{"duplicate", []string{"system", "system", "conversation"}, "listed twice"},
		{"empty name", []string{"system", "", "conversation"}, "Sections[1] is empty"},
		{"no conversation", []string{"system", "user_context"}, `lacks "conversation"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middlewares.Ordering(middlewares.OrderingConfig{Sections: tc.sections})
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}
