package projector_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

func TestApplyAppends(t *testing.T) {
	tests := []struct {
		name string
		p    events.Payload
		want projector.Block
	}{
		{
			name: "user",
			p:    events.UserAppended{BlockID: "u", Text: "hi", Meta: map[string]string{events.MetaSection: "conversation"}},
			want: projector.Block{ID: "u", Kind: events.KindUser, Text: "hi", Meta: map[string]string{events.MetaSection: "conversation"}},
		},
		{
			name: "trusted user",
			p:    events.UserAppended{BlockID: "u", Text: "operator note", Trust: events.Trusted},
			want: projector.Block{ID: "u", Kind: events.KindUser, Text: "operator note", Trust: events.Trusted},
		},
		{
			name: "system prompt",
			p:    events.SystemPromptSet{BlockID: "s", Text: "be brief", Index: 6, Trust: events.Trusted, Meta: map[string]string{events.MetaSystemPromptSource: "tmpl"}, TemplateHash: "h", Variables: map[string]string{"a": "b"}},
			want: projector.Block{ID: "s", Kind: events.KindSystem, Text: "be brief", Trust: events.Trusted, Meta: map[string]string{events.MetaSystemPromptSource: "tmpl"}},
		},
		{
			name: "untrusted system prompt stays untrusted",
			p:    events.SystemPromptSet{BlockID: "s", Text: "x", Index: 6},
			want: projector.Block{ID: "s", Kind: events.KindSystem, Text: "x"},
		},
		{
			name: "reasoning",
			p:    events.ReasoningAppended{BlockID: "r", Text: "think", Encrypted: "opaque", Meta: map[string]string{"k": "v"}},
			want: projector.Block{ID: "r", Kind: events.KindReasoning, Text: "think", Encrypted: "opaque", Meta: map[string]string{"k": "v"}},
		},
		{
			name: "llm text",
			p:    events.LLMTextAppended{BlockID: "l", Text: "answer", Meta: map[string]string{"model": "m"}},
			want: projector.Block{ID: "l", Kind: events.KindLLMText, Text: "answer", Meta: map[string]string{"model": "m"}},
		},
		{
			name: "tool call",
			p:    events.ToolCalled{BlockID: "t", CallID: "c", Name: "search", Arguments: `{"q":"x"}`, Meta: map[string]string{"k": "v"}},
			want: projector.Block{ID: "t", Kind: events.KindToolCall, CallID: "c", ToolName: "search", Arguments: `{"q":"x"}`, Meta: map[string]string{"k": "v"}},
		},
		{
			name: "tool result",
			p:    events.ToolResult{BlockID: "t", CallID: "c", Text: "boom", IsError: true},
			want: projector.Block{ID: "t", Kind: events.KindToolResult, CallID: "c", Text: "boom", IsError: true},
		},
		{
			name: "empty meta is no meta",
			p:    events.LLMTextAppended{BlockID: "l", Text: "x", Meta: map[string]string{}},
			want: projector.Block{ID: "l", Kind: events.KindLLMText, Text: "x"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := base(t)
			before := stateOf(turn)
			e := ev(tc.p)
			require.NoError(t, projector.Apply(turn, e))

			require.Len(t, turn.Blocks, len(before.Blocks)+1)
			assert.Equal(t, tc.want, turn.Blocks[len(turn.Blocks)-1])
			assert.Equal(t, before.Blocks, turn.Blocks[:len(before.Blocks)], "earlier blocks changed")
			assert.Equal(t, before.Data, turn.Data)
			assert.Equal(t, before.Events+1, turn.Events)
			got, ok := turn.Block(tc.want.ID)
			assert.True(t, ok)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, len(turn.Blocks)-1, turn.Index(tc.want.ID))

			// The block owns its metadata: changing the event afterwards
			// must not change the Turn.
			for _, m := range []map[string]string{metaOf(tc.p)} {
				for k := range m {
					m[k] = "changed by the caller"
				}
			}
			assert.Equal(t, tc.want.Meta, turn.Blocks[len(turn.Blocks)-1].Meta)
		})
	}
}

// metaOf returns the Meta map an appending payload carries.
func metaOf(p events.Payload) map[string]string {
	switch p := p.(type) {
	case events.UserAppended:
		return p.Meta
	case events.SystemPromptSet:
		return p.Meta
	case events.ReasoningAppended:
		return p.Meta
	case events.LLMTextAppended:
		return p.Meta
	case events.ToolCalled:
		return p.Meta
	case events.ToolResult:
		return p.Meta
	}
	return nil
}

func TestApplySystemPromptSet(t *testing.T) {
	tests := []struct {
		name      string
		index     int
		wantOrder []string
		wantFirst string // the active system prompt afterwards
	}{
		{name: "at the front", index: 0, wantOrder: []string{"s2", "s1", "u1", "r1", "t1", "t2", "l1"}, wantFirst: "s2"},
		{name: "in the middle", index: 3, wantOrder: []string{"s1", "u1", "r1", "s2", "t1", "t2", "l1"}, wantFirst: "s1"},
		{name: "at the end", index: 6, wantOrder: []string{"s1", "u1", "r1", "t1", "t2", "l1", "s2"}, wantFirst: "s1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := base(t)
			require.Equal(t, []string{"s1", "u1", "r1", "t1", "t2", "l1"}, ids(turn))
			require.NoError(t, projector.Apply(turn, ev(events.SystemPromptSet{BlockID: "s2", Text: "second", Trust: events.Trusted, Index: tc.index})))
			assert.Equal(t, tc.wantOrder, ids(turn))
			for i, id := range tc.wantOrder {
				assert.Equal(t, i, turn.Index(id), "Index(%s) after an insert", id)
			}
			sp, i, ok := turn.SystemPrompt()
			require.True(t, ok)
			assert.Equal(t, tc.wantFirst, sp.ID)
			assert.Equal(t, turn.Index(tc.wantFirst), i)
		})
	}
	t.Run("into an empty turn", func(t *testing.T) {
		turn := build(t, events.SystemPromptSet{BlockID: "s", Text: "x"})
		assert.Equal(t, []string{"s"}, ids(turn))
	})
}

func TestApplySystemPromptReplaced(t *testing.T) {
	tests := []struct {
		name     string
		meta     map[string]string
		wantMeta map[string]string
	}{
		{name: "text only", meta: nil, wantMeta: map[string]string{events.MetaSystemPromptSource: "global"}},
		{name: "meta added and changed",
			meta:     map[string]string{events.MetaSystemPromptSource: "tmpl", events.MetaSystemPromptLock: "1"},
			wantMeta: map[string]string{events.MetaSystemPromptSource: "tmpl", events.MetaSystemPromptLock: "1"}},
		{name: "empty value deletes",
			meta:     map[string]string{events.MetaSystemPromptSource: "", "new": "x", "absent": ""},
			wantMeta: map[string]string{"new": "x"}},
		{name: "deleting every key leaves no meta", meta: map[string]string{events.MetaSystemPromptSource: ""}, wantMeta: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := base(t)
			before := stateOf(turn)
			shared := turn.Blocks[0].Meta // a snapshot or clone might share it
			require.NoError(t, projector.Apply(turn, ev(events.SystemPromptReplaced{BlockID: "s1", Previous: "be brief", Text: "be thorough", Meta: tc.meta})))
			b, ok := turn.Block("s1")
			require.True(t, ok)
			assert.Equal(t, "be thorough", b.Text)
			assert.Equal(t, tc.wantMeta, b.Meta)
			assert.Equal(t, events.KindSystem, b.Kind)
			assert.Equal(t, events.Trusted, b.Trust, "replacing the text keeps the trust")
			assert.Equal(t, ids(turn), []string{"s1", "u1", "r1", "t1", "t2", "l1"})
			assert.Equal(t, before.Blocks[1:], turn.Blocks[1:])
			assert.Equal(t, map[string]string{events.MetaSystemPromptSource: "global"}, shared, "the old meta map was changed in place")
		})
	}
	t.Run("a system prompt that is not the first", func(t *testing.T) {
		turn := build(t,
			events.SystemPromptSet{BlockID: "a", Text: "one"},
			events.SystemPromptSet{BlockID: "b", Text: "two", Index: 1},
			events.SystemPromptReplaced{BlockID: "b", Previous: "two", Text: "deux"},
		)
		assert.Equal(t, "one", turn.Blocks[0].Text)
		assert.Equal(t, "deux", turn.Blocks[1].Text)
	})
	t.Run("replacing with the same text", func(t *testing.T) {
		turn := build(t, events.SystemPromptSet{BlockID: "a", Text: "one"}, events.SystemPromptReplaced{BlockID: "a", Previous: "one", Text: "one"})
		assert.Equal(t, "one", turn.Blocks[0].Text)
		assert.Equal(t, 2, turn.Events)
	})
}

func TestApplyReordered(t *testing.T) {
	turn := base(t)
	order := []string{"u1", "s1", "l1", "t1", "t2", "r1"}
	before := stateOf(turn)
	require.NoError(t, projector.Apply(turn, ev(events.BlocksReordered{Order: order, Reason: "test"})))
	assert.Equal(t, order, ids(turn))
	for i, id := range order {
		assert.Equal(t, i, turn.Index(id))
		b, ok := turn.Block(id)
		require.True(t, ok)
		assert.Contains(t, before.Blocks, b, "a block changed in the reorder")
	}
	assert.Equal(t, before.Events+1, turn.Events)

	t.Run("an empty turn", func(t *testing.T) {
		turn := build(t, events.BlocksReordered{})
		assert.Empty(t, turn.Blocks)
		assert.Equal(t, 1, turn.Events)
	})
}

func TestApplyRemoved(t *testing.T) {
	turn := base(t)
	require.NoError(t, projector.Apply(turn, ev(events.BlocksRemoved{BlockIDs: []string{"t2", "r1"}, Reason: "orphans"})))
	assert.Equal(t, []string{"s1", "u1", "t1", "l1"}, ids(turn))
	assert.Equal(t, -1, turn.Index("r1"))
	assert.Equal(t, 3, turn.Index("l1"))
	_, ok := turn.Block("t2")
	assert.False(t, ok)

	require.NoError(t, projector.Apply(turn, ev(events.BlocksRemoved{BlockIDs: []string{"s1", "u1", "t1", "l1"}, Reason: "all"})))
	assert.Empty(t, turn.Blocks)
	_, _, ok = turn.SystemPrompt()
	assert.False(t, ok)
}

func TestApplyAnnotated(t *testing.T) {
	turn := base(t)
	require.NoError(t, projector.Apply(turn, ev(events.BlockAnnotated{BlockID: "u1", Meta: map[string]string{"role_marker": "1", events.MetaSection: ""}})))
	b, _ := turn.Block("u1")
	assert.Equal(t, map[string]string{"role_marker": "1"}, b.Meta)
	assert.Equal(t, "hello", b.Text)

	require.NoError(t, projector.Apply(turn, ev(events.BlockAnnotated{BlockID: "l1", Meta: map[string]string{"a": "1"}})))
	b, _ = turn.Block("l1")
	assert.Equal(t, map[string]string{"a": "1"}, b.Meta)
}

// TestApplyLockAndUnlock: the lock is metadata the middlewares read, set
// to whoever locked the block; unlocking removes it and nothing else.
func TestApplyLockAndUnlock(t *testing.T) {
	turn := base(t)
	locked := events.New(conv, "op-1", 0, "operator:ada", events.SystemPromptLocked{BlockID: "s1", Reason: "legal review"})
	require.NoError(t, projector.Apply(turn, locked))
	b, _ := turn.Block("s1")
	assert.Equal(t, map[string]string{events.MetaSystemPromptSource: "global", events.MetaSystemPromptLock: "operator:ada"}, b.Meta)
	assert.Equal(t, "be brief", b.Text)

	require.NoError(t, projector.Apply(turn, ev(events.SystemPromptUnlocked{BlockID: "s1"})))
	b, _ = turn.Block("s1")
	assert.Equal(t, map[string]string{events.MetaSystemPromptSource: "global"}, b.Meta)
	assert.Equal(t, 9, turn.Events)
}

func TestApplySplit(t *testing.T) {
	into := []events.Block{
		{ID: "s1", Kind: events.KindSystem, Text: "be", Trust: events.Trusted},
		{ID: "s1-user", Kind: events.KindUser, Text: "brief", Meta: map[string]string{"split_from": "s1"}},
		{ID: "s1-empty-meta", Kind: events.KindOther, Meta: map[string]string{}},
	}
	turn := base(t)
	p := events.BlockSplit{BlockID: "s1", Into: into, Reason: "role markers"}
	require.NoError(t, projector.Apply(turn, ev(p)))
	assert.Equal(t, []string{"s1", "s1-user", "s1-empty-meta", "u1", "r1", "t1", "t2", "l1"}, ids(turn))
	assert.Equal(t, into[:2], turn.Blocks[:2])
	assert.Nil(t, turn.Blocks[2].Meta, "empty meta is no meta")
	assert.Equal(t, 4, turn.Index("r1"))

	p.Into[1].Meta["split_from"] = "changed by the caller"
	assert.Equal(t, "s1", turn.Blocks[1].Meta["split_from"], "the split block shares its meta with the event")

	t.Run("in the middle, into new IDs", func(t *testing.T) {
		turn := base(t)
		require.NoError(t, projector.Apply(turn, ev(events.BlockSplit{BlockID: "t1", Into: []events.Block{
			{ID: "x", Kind: events.KindOther}, {ID: "y", Kind: events.KindOther},
		}})))
		assert.Equal(t, []string{"s1", "u1", "r1", "x", "y", "t2", "l1"}, ids(turn))
		assert.Equal(t, -1, turn.Index("t1"))
	})
}

func TestApplyCompacted(t *testing.T) {
	summary := &events.Block{ID: "sum", Kind: events.KindOther, Text: "earlier: greetings", Meta: map[string]string{"compacted": "3"}}
	tests := []struct {
		name    string
		p       events.TurnCompacted
		wantIDs []string
	}{
		{name: "contiguous, with summary", p: events.TurnCompacted{Removed: []string{"u1", "r1", "t1"}, Summary: summary},
			wantIDs: []string{"s1", "sum", "t2", "l1"}},
		{name: "summary where the first removed block stood, whatever the list's order", p: events.TurnCompacted{Removed: []string{"l1", "t1", "u1"}, Summary: summary},
			wantIDs: []string{"s1", "sum", "r1", "t2"}},
		{name: "the first block", p: events.TurnCompacted{Removed: []string{"s1"}, Summary: summary},
			wantIDs: []string{"sum", "u1", "r1", "t1", "t2", "l1"}},
		{name: "the last block", p: events.TurnCompacted{Removed: []string{"l1"}, Summary: summary},
			wantIDs: []string{"s1", "u1", "r1", "t1", "t2", "sum"}},
		{name: "everything", p: events.TurnCompacted{Removed: []string{"s1", "u1", "r1", "t1", "t2", "l1"}, Summary: summary},
			wantIDs: []string{"sum"}},
		{name: "summary reuses a removed ID", p: events.TurnCompacted{Removed: []string{"r1", "u1"}, Summary: &events.Block{ID: "u1", Kind: events.KindOther, Text: "s"}},
			wantIDs: []string{"s1", "u1", "t1", "t2", "l1"}},
		{name: "without summary", p: events.TurnCompacted{Removed: []string{"u1", "t2"}},
			wantIDs: []string{"s1", "r1", "t1", "l1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := base(t)
			require.NoError(t, projector.Apply(turn, ev(tc.p)))
			assert.Equal(t, tc.wantIDs, ids(turn))
			for i, id := range tc.wantIDs {
				assert.Equal(t, i, turn.Index(id))
			}
			if tc.p.Summary != nil {
				b, ok := turn.Block(tc.p.Summary.ID)
				require.True(t, ok)
				assert.Equal(t, *tc.p.Summary, b)
			}
		})
	}
	t.Run("the summary is the Turn's own copy", func(t *testing.T) {
		turn := base(t)
		s := &events.Block{ID: "sum", Kind: events.KindOther, Meta: map[string]string{"k": "v"}}
		require.NoError(t, projector.Apply(turn, ev(events.TurnCompacted{Removed: []string{"u1"}, Summary: s})))
		s.Meta["k"] = "changed by the caller"
		s.Text = "changed"
		b, _ := turn.Block("sum")
		assert.Equal(t, events.Block{ID: "sum", Kind: events.KindOther, Meta: map[string]string{"k": "v"}}, b)
	})
}

func TestApplyDataSet(t *testing.T) {
	tests := []struct {
		name string
		p    []events.DataSet
		want map[string]string
	}{
		{name: "set on an empty turn", p: []events.DataSet{{Values: map[string]string{"tz": "UTC"}}}, want: map[string]string{"tz": "UTC"}},
		{name: "overwrite and add", p: []events.DataSet{{Values: map[string]string{"tz": "UTC"}}, {Values: map[string]string{"tz": "CET", "page": "/x"}}},
			want: map[string]string{"tz": "CET", "page": "/x"}},
		{name: "unset", p: []events.DataSet{{Values: map[string]string{"tz": "UTC", "page": "/"}}, {Unset: []string{"page"}}}, want: map[string]string{"tz": "UTC"}},
		{name: "unset a missing key", p: []events.DataSet{{Unset: []string{"nope"}}}, want: nil},
		{name: "set and unset the same key: unset wins", p: []events.DataSet{{Values: map[string]string{"a": "1"}, Unset: []string{"a"}}}, want: nil},
		{name: "unset everything leaves no data", p: []events.DataSet{{Values: map[string]string{"a": "1"}}, {Unset: []string{"a"}}}, want: nil},
		{name: "empty value is a value", p: []events.DataSet{{Values: map[string]string{"a": ""}}}, want: map[string]string{"a": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := projector.New(conv)
			for _, p := range tc.p {
				require.NoError(t, projector.Apply(turn, ev(p)))
			}
			assert.Equal(t, tc.want, turn.Data)
			assert.Equal(t, len(tc.p), turn.Events)
			assert.Nil(t, turn.Blocks)
		})
	}
	t.Run("the Turn owns its data", func(t *testing.T) {
		values := map[string]string{"tz": "UTC"}
		turn := build(t, events.DataSet{Values: values})
		values["tz"] = "changed by the caller"
		assert.Equal(t, map[string]string{"tz": "UTC"}, turn.Data)
	})
}

func TestApplyFactsChangeOnlyThePosition(t *testing.T) {
	tests := []struct {
		name string
		p    events.Payload
	}{
		{name: "inference started", p: events.InferenceStarted{InferenceID: "i", Model: "m", InputHash: "h", Blocks: 6}},
		{name: "inference finished", p: events.InferenceFinished{InferenceID: "i", Duration: time.Second}},
		{name: "inference failed", p: events.InferenceFailed{InferenceID: "i", Error: "x"}},
		// What the client received before the call failed is in the
		// record, never in the Turn: there was no answer to go on from.
		{name: "inference failed with a partial output", p: events.InferenceFailed{InferenceID: "i", Error: "cut", Partial: []events.Block{
			{ID: "p1", Kind: events.KindLLMText, Text: "Hel"}, {ID: "p2", Kind: events.KindToolCall, CallID: "c1", ToolName: "f", Arguments: `{"a`}}}},
		{name: "request completed", p: events.RequestCompleted{Inferences: 1}},
		{name: "request failed", p: events.RequestFailed{Reason: "x"}},
		{name: "conversation started without content", p: events.ConversationStarted{Profile: "p"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := base(t)
			want := stateOf(turn)
			want.Events++
			require.NoError(t, projector.Apply(turn, ev(tc.p)))
			assert.Equal(t, want, stateOf(turn))
		})
	}
}

func TestApplyConversationStarted(t *testing.T) {
	fork := events.ConversationStarted{
		ForkedFrom: "origin", ForkedAt: 12,
		Blocks: []events.Block{
			{ID: "s", Kind: events.KindSystem, Text: "sys", Trust: events.Trusted, Meta: map[string]string{"k": "v"}},
			{ID: "u", Kind: events.KindUser, Text: "hi", Meta: map[string]string{}},
			{ID: "c", Kind: events.KindToolCall, CallID: "c1", ToolName: "f"},
		},
		Data: map[string]string{"tz": "UTC"},
	}
	turn := projector.New(conv)
	require.NoError(t, projector.Apply(turn, ev(fork)))
	assert.Equal(t, []projector.Block{
		{ID: "s", Kind: events.KindSystem, Text: "sys", Trust: events.Trusted, Meta: map[string]string{"k": "v"}},
		{ID: "u", Kind: events.KindUser, Text: "hi"},
		{ID: "c", Kind: events.KindToolCall, CallID: "c1", ToolName: "f"},
	}, turn.Blocks)
	assert.Equal(t, map[string]string{"tz": "UTC"}, turn.Data)
	assert.Equal(t, 1, turn.Events)
	assert.Equal(t, 2, turn.Index("c"))

	fork.Blocks[0].Meta["k"] = "changed by the caller"
	fork.Blocks[0].Text = "changed"
	fork.Data["tz"] = "changed"
	assert.Equal(t, "sys", turn.Blocks[0].Text)
	assert.Equal(t, "v", turn.Blocks[0].Meta["k"], "the Turn shares block meta with the event")
	assert.Equal(t, "UTC", turn.Data["tz"], "the Turn shares data with the event")

	t.Run("data only", func(t *testing.T) {
		turn := build(t, events.ConversationStarted{Data: map[string]string{"a": "b"}})
		assert.Equal(t, map[string]string{"a": "b"}, turn.Data)
		assert.Empty(t, turn.Blocks)
	})
	t.Run("after other events that left the turn empty", func(t *testing.T) {
		turn := build(t, events.InferenceStarted{InferenceID: "i", InputHash: "h"}, events.ConversationStarted{Blocks: []events.Block{{ID: "a", Kind: events.KindUser}}})
		assert.Equal(t, []string{"a"}, ids(turn))
	})
	t.Run("the first event names the conversation", func(t *testing.T) {
		turn := &projector.Turn{}
		require.NoError(t, projector.Apply(turn, ev(events.RequestCompleted{})))
		assert.Equal(t, conv, turn.Conversation)
	})
}

func TestApplyAll(t *testing.T) {
	evs := []events.Event{
		ev(events.UserAppended{BlockID: "a"}),
		ev(events.UserAppended{BlockID: "b"}),
		ev(events.UserAppended{BlockID: "a"}),
		ev(events.UserAppended{BlockID: "c"}),
	}
	turn := projector.New(conv)
	err := projector.ApplyAll(turn, evs)
	require.ErrorIs(t, err, projector.ErrDuplicateBlock)
	assert.Contains(t, err.Error(), "apply event 3 (user.appended)")
	assert.Equal(t, []string{"a", "b"}, ids(turn), "ApplyAll stops at the first error")
	assert.Equal(t, 2, turn.Events)

	turn = projector.New(conv)
	require.NoError(t, projector.ApplyAll(turn, evs[:2]))
	assert.Equal(t, 2, turn.Events)
	require.NoError(t, projector.ApplyAll(turn, nil))
	assert.Equal(t, 2, turn.Events)
}

// A block's untrusted spans come with its text: set with the prompt, replaced
// with it (a replacing text without spans is the operator's throughout),
// carried by split parts, and refused when they do not fit the text.
func TestApplyUntrustedSpans(t *testing.T) {
	spans := []events.Span{{Start: 4, End: 9, Var: "file:AGENTS.md"}}
	turn := build(t,
		events.SystemPromptSet{BlockID: "s", Text: "See: hello.", Trust: events.Trusted, Untrusted: spans},
	)
	require.Len(t, turn.Blocks, 1)
	assert.Equal(t, spans, turn.Blocks[0].Untrusted)

	spans[0].Start = 0 // the Turn holds its own copy
	assert.Equal(t, 4, turn.Blocks[0].Untrusted[0].Start)

	require.NoError(t, projector.Apply(turn, ev(events.SystemPromptReplaced{BlockID: "s", Previous: "See: hello.", Text: "Now: [x]", Untrusted: []events.Span{{Start: 5, End: 8, Var: "system:time"}}})))
	assert.Equal(t, []events.Span{{Start: 5, End: 8, Var: "system:time"}}, turn.Blocks[0].Untrusted)
	require.NoError(t, projector.Apply(turn, ev(events.SystemPromptReplaced{BlockID: "s", Previous: "Now: [x]", Text: "Operator text."})))
	assert.Nil(t, turn.Blocks[0].Untrusted, "a replacing text without spans has none")

	require.NoError(t, projector.Apply(turn, ev(events.BlockSplit{BlockID: "s", Into: []events.Block{
		{ID: "s", Kind: events.KindSystem, Text: "Operator", Trust: events.Trusted, Untrusted: []events.Span{{Start: 0, End: 2}}},
		{ID: "s2", Kind: events.KindSystem, Text: "text.", Trust: events.Trusted},
	}})))
	assert.Equal(t, []events.Span{{Start: 0, End: 2}}, turn.Blocks[0].Untrusted)
	assert.Nil(t, turn.Blocks[1].Untrusted)

	before := stateOf(turn)
	for _, bad := range [][]events.Span{
		{{Start: 0, End: 99}},
		{{Start: 3, End: 3}},
		{{Start: 4, End: 6}, {Start: 5, End: 7}},
	} {
		err := projector.Apply(turn, ev(events.SystemPromptReplaced{BlockID: "s", Previous: "Operator", Text: "Replaced", Untrusted: bad}))
		require.ErrorIs(t, err, events.ErrInvalid, "%v", bad)
		assert.Contains(t, err.Error(), "untrusted[")
	}
	assert.Equal(t, before, stateOf(turn), "a refused event changes nothing")
}

func TestBlockInserted(t *testing.T) {
	turn := projector.New(conv)
	require.NoError(t, projector.Apply(turn, ev(events.UserAppended{BlockID: "u1", Text: "first"})))
	require.NoError(t, projector.Apply(turn, ev(events.LLMTextAppended{BlockID: "l1", Text: "answer"})))

	cases := []struct {
		name  string
		index int
		want  []string
	}{
		{name: "at the front", index: 0, want: []string{"x0", "u1", "l1"}},
		{name: "between", index: 2, want: []string{"x0", "u1", "x2", "l1"}},
		{name: "at the end", index: 4, want: []string{"x0", "u1", "x2", "l1", "x4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("x%d", tc.index)
			require.NoError(t, projector.Apply(turn, ev(events.BlockInserted{Index: tc.index,
				Block: events.Block{ID: id, Kind: events.KindOther, Text: "note", Meta: map[string]string{events.MetaSection: "user_context"}}})))
			assert.Equal(t, tc.want, ids(turn))
			b, ok := turn.Block(id)
			require.True(t, ok)
			assert.Equal(t, "user_context", b.Meta[events.MetaSection])
		})
	}

	before := stateOf(turn)
	err := projector.Apply(turn, ev(events.BlockInserted{Index: 6, Block: events.Block{ID: "late", Kind: events.KindUser}}))
	assert.ErrorIs(t, err, projector.ErrMismatch)
	assert.ErrorContains(t, err, "index 6, but the turn has 5 blocks")
	err = projector.Apply(turn, ev(events.BlockInserted{Index: 1, Block: events.Block{ID: "u1", Kind: events.KindUser}}))
	assert.ErrorIs(t, err, projector.ErrDuplicateBlock)
	assert.Equal(t, before, stateOf(turn), "a refused insertion changes nothing")
}
