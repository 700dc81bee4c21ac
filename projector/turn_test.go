package projector_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/vmihailenco/msgpack/v5"
)

func TestSystemPrompt(t *testing.T) {
	tests := []struct {
		name      string
		ps        []events.Payload
		wantID    string
		wantIndex int
	}{
		{name: "none in an empty turn", wantIndex: -1},
		{name: "none among other blocks", ps: []events.Payload{events.UserAppended{BlockID: "u"}, events.LLMTextAppended{BlockID: "l"}}, wantIndex: -1},
		{name: "the only one", ps: []events.Payload{events.UserAppended{BlockID: "u"}, events.SystemPromptSet{BlockID: "s", Index: 1}}, wantID: "s", wantIndex: 1},
		{name: "the first of several", ps: []events.Payload{
			events.UserAppended{BlockID: "u"},
			events.SystemPromptSet{BlockID: "late", Index: 1},
			events.SystemPromptSet{BlockID: "early", Index: 0},
		}, wantID: "early", wantIndex: 0},
		{name: "moved by a reorder", ps: []events.Payload{
			events.SystemPromptSet{BlockID: "a"},
			events.SystemPromptSet{BlockID: "b", Index: 1},
			events.UserAppended{BlockID: "u"},
			events.BlocksReordered{Order: []string{"u", "b", "a"}},
		}, wantID: "b", wantIndex: 1},
		{name: "after the first is removed", ps: []events.Payload{
			events.SystemPromptSet{BlockID: "a"},
			events.SystemPromptSet{BlockID: "b", Index: 1},
			events.BlocksRemoved{BlockIDs: []string{"a"}, Reason: "x"},
		}, wantID: "b", wantIndex: 0},
		{name: "from a split", ps: []events.Payload{
			events.UserAppended{BlockID: "u", Trust: events.Trusted},
			events.BlockSplit{BlockID: "u", Into: []events.Block{{ID: "u", Kind: events.KindUser}, {ID: "s", Kind: events.KindSystem, Trust: events.Trusted}}},
		}, wantID: "s", wantIndex: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := build(t, tc.ps...)
			b, i, ok := turn.SystemPrompt()
			assert.Equal(t, tc.wantID != "", ok)
			assert.Equal(t, tc.wantIndex, i)
			assert.Equal(t, tc.wantID, b.ID)
			if ok {
				assert.Equal(t, events.KindSystem, b.Kind)
			}
		})
	}
}

func TestIndexAndBlock(t *testing.T) {
	turn := base(t)
	assert.Equal(t, -1, turn.Index("nope"))
	assert.Equal(t, -1, turn.Index(""))
	_, ok := turn.Block("nope")
	assert.False(t, ok)
	b, ok := turn.Block("t1")
	require.True(t, ok)
	assert.Equal(t, "lookup", b.ToolName)

	// A Turn built by hand (a decoded snapshot) has no index yet.
	lit := &projector.Turn{Conversation: conv, Blocks: []projector.Block{{ID: "x", Kind: events.KindUser}, {ID: "y", Kind: events.KindUser}}}
	assert.Equal(t, 1, lit.Index("y"))
	require.NoError(t, projector.Apply(lit, ev(events.UserAppended{BlockID: "z"})))
	assert.Equal(t, 2, lit.Index("z"))
	assert.ErrorIs(t, projector.Apply(lit, ev(events.UserAppended{BlockID: "x"})), projector.ErrDuplicateBlock)
}

func TestClone(t *testing.T) {
	turn := base(t)
	turn.Seq = 42
	c := turn.Clone()
	assertSameTurn(t, turn, c)
	assert.Equal(t, projector.Hash(turn), projector.Hash(c))

	// Change everything a clone holds; the original must not move.
	want := stateOf(turn)
	c.Blocks[1].Meta[events.MetaSection] = "changed"
	c.Blocks[1].Meta["added"] = "x"
	c.Blocks[0].Text = "changed"
	c.Data["tz"] = "changed"
	c.Blocks = append(c.Blocks, projector.Block{ID: "extra"})
	require.NoError(t, projector.Apply(c, ev(events.SystemPromptReplaced{BlockID: "s1", Previous: "changed", Text: "x", Meta: map[string]string{"m": "1"}})))
	require.NoError(t, projector.Apply(c, ev(events.BlocksReordered{Order: []string{"extra", "l1", "t2", "t1", "r1", "u1", "s1"}})))
	require.NoError(t, projector.Apply(c, ev(events.DataSet{Values: map[string]string{"new": "1"}, Unset: []string{"page"}})))
	assert.Equal(t, want, stateOf(turn), "changing a clone changed the original")
	for i, b := range turn.Blocks {
		assert.Equal(t, i, turn.Index(b.ID))
	}

	// And the other way round.
	c2 := turn.Clone()
	turn.Blocks[1].Meta[events.MetaSection] = "changed in the original"
	turn.Data["tz"] = "changed in the original"
	assert.Equal(t, "conversation", c2.Blocks[1].Meta[events.MetaSection])
	assert.Equal(t, "UTC", c2.Data["tz"])

	t.Run("empty turn", func(t *testing.T) {
		e := projector.New(conv)
		assertSameTurn(t, e, e.Clone())
		assert.Nil(t, e.Clone().Blocks)
		assert.Nil(t, e.Clone().Data)
	})
}

func TestHash(t *testing.T) {
	ref := base(t)
	refHash := projector.Hash(ref)
	require.True(t, strings.HasPrefix(refHash, "v2:"), "the hash names its format")
	require.Len(t, refHash, len("v2:")+64)
	refV1 := projector.HashV1(ref)

	changed := []struct {
		name   string
		change func(t *testing.T, turn *projector.Turn)
	}{
		{name: "a block's text", change: func(t *testing.T, turn *projector.Turn) {
			require.NoError(t, projector.Apply(turn, ev(events.SystemPromptReplaced{BlockID: "s1", Previous: "be brief", Text: "be brief."})))
		}},
		{name: "the order", change: func(t *testing.T, turn *projector.Turn) {
			require.NoError(t, projector.Apply(turn, ev(events.BlocksReordered{Order: []string{"u1", "s1", "r1", "t1", "t2", "l1"}})))
		}},
		{name: "a meta value", change: func(t *testing.T, turn *projector.Turn) {
			require.NoError(t, projector.Apply(turn, ev(events.BlockAnnotated{BlockID: "u1", Meta: map[string]string{events.MetaSection: "user_context"}})))
		}},
		{name: "a meta key added", change: func(t *testing.T, turn *projector.Turn) {
			require.NoError(t, projector.Apply(turn, ev(events.BlockAnnotated{BlockID: "l1", Meta: map[string]string{"x": "1"}})))
		}},
		{name: "a data value", change: func(t *testing.T, turn *projector.Turn) {
			require.NoError(t, projector.Apply(turn, ev(events.DataSet{Values: map[string]string{"tz": "CET"}})))
		}},
		{name: "a data key removed", change: func(t *testing.T, turn *projector.Turn) {
			require.NoError(t, projector.Apply(turn, ev(events.DataSet{Unset: []string{"page"}})))
		}},
		{name: "a block appended", change: func(t *testing.T, turn *projector.Turn) {
			require.NoError(t, projector.Apply(turn, ev(events.UserAppended{BlockID: "u2"})))
		}},
		{name: "a block removed", change: func(t *testing.T, turn *projector.Turn) {
			require.NoError(t, projector.Apply(turn, ev(events.BlocksRemoved{BlockIDs: []string{"r1"}, Reason: "x"})))
		}},
		{name: "a block's trust", change: func(t *testing.T, turn *projector.Turn) { turn.Blocks[1].Trust = events.Trusted }},
		{name: "a block's kind", change: func(t *testing.T, turn *projector.Turn) { turn.Blocks[1].Kind = events.KindOther }},
		{name: "a block's ID", change: func(t *testing.T, turn *projector.Turn) { turn.Blocks[1].ID = "u1b" }},
		{name: "encrypted reasoning", change: func(t *testing.T, turn *projector.Turn) { turn.Blocks[2].Encrypted = "other" }},
		{name: "tool arguments", change: func(t *testing.T, turn *projector.Turn) { turn.Blocks[3].Arguments = `{"q":2}` }},
		{name: "tool error flag", change: func(t *testing.T, turn *projector.Turn) { turn.Blocks[4].IsError = true }},
		{name: "text moved between blocks", change: func(t *testing.T, turn *projector.Turn) {
			turn.Blocks[1].Text, turn.Blocks[5].Text = turn.Blocks[5].Text, turn.Blocks[1].Text
		}},
	}
	seen := map[string]string{refHash: "reference"}
	for _, tc := range changed {
		t.Run("changes with "+tc.name, func(t *testing.T) {
			turn := base(t)
			tc.change(t, turn)
			h := projector.Hash(turn)
			assert.NotEqual(t, refHash, h)
			assert.False(t, projector.HashMatches(turn, refHash), "v2")
			assert.False(t, projector.HashMatches(turn, refV1), "v1")
			if other, dup := seen[h]; dup {
				t.Errorf("same hash as %q", other)
			}
			seen[h] = tc.name
		})
	}

	same := []struct {
		name string
		turn func(t *testing.T) *projector.Turn
	}{
		{name: "another conversation, position and sequence", turn: func(t *testing.T) *projector.Turn {
			turn := base(t)
			turn.Conversation = "another"
			turn.Events = 999
			turn.Seq = 12345
			return turn
		}},
		{name: "the same content reached by other events", turn: func(t *testing.T) *projector.Turn {
			return build(t,
				events.ConversationStarted{Blocks: []events.Block{{ID: "junk", Kind: events.KindOther}}, Data: map[string]string{"page": "/"}},
				events.ToolCalled{BlockID: "t1", CallID: "c1", Name: "lookup", Arguments: `{"q":1}`},
				events.SystemPromptSet{BlockID: "s1", Text: "draft", Trust: events.Trusted, Meta: map[string]string{events.MetaSystemPromptSource: "global", "tmp": "1"}},
				events.SystemPromptReplaced{BlockID: "s1", Previous: "draft", Text: "be brief", Meta: map[string]string{"tmp": ""}},
				events.ToolResult{BlockID: "t2", CallID: "c1", Text: "42"},
				events.LLMTextAppended{BlockID: "l1", Text: "done"},
				events.UserAppended{BlockID: "u1", Text: "hello", Meta: map[string]string{events.MetaSection: "conversation"}},
				events.ReasoningAppended{BlockID: "r1", Text: "hmm", Encrypted: "enc"},
				events.BlocksReordered{Order: []string{"junk", "s1", "u1", "r1", "t1", "t2", "l1"}},
				events.TurnCompacted{Removed: []string{"junk"}},
				events.DataSet{Values: map[string]string{"tz": "UTC", "x": "1"}, Unset: []string{"x"}},
			)
		}},
		{name: "a clone", turn: func(t *testing.T) *projector.Turn { return base(t).Clone() }},
		{name: "a msgpack snapshot", turn: func(t *testing.T) *projector.Turn { return msgpackRoundTrip(t, base(t)) }},
		{name: "a JSON export", turn: func(t *testing.T) *projector.Turn { return jsonRoundTrip(t, base(t)) }},
	}
	for _, tc := range same {
		t.Run("equal for "+tc.name, func(t *testing.T) {
			turn := tc.turn(t)
			assert.Equal(t, refHash, projector.Hash(turn))
			assert.True(t, projector.HashMatches(turn, refV1), "v1")
		})
	}

	t.Run("map order does not matter", func(t *testing.T) {
		// Go randomises map iteration; build big maps in opposite orders
		// and hash them many times.
		meta1, meta2 := map[string]string{}, map[string]string{}
		for i := 0; i < 64; i++ {
			meta1[fmt.Sprint("k", i)] = fmt.Sprint(i)
			meta2[fmt.Sprint("k", 63-i)] = fmt.Sprint(63 - i)
		}
		a := build(t, events.UserAppended{BlockID: "u", Meta: meta1}, events.DataSet{Values: meta1})
		b := build(t, events.UserAppended{BlockID: "u", Meta: meta2}, events.DataSet{Values: meta2})
		want := projector.Hash(a)
		for i := 0; i < 20; i++ {
			require.Equal(t, want, projector.Hash(a))
			require.Equal(t, want, projector.Hash(b))
		}
	})

	t.Run("empty is empty however it was reached", func(t *testing.T) {
		// A snapshot stores no empty data and a removal leaves an empty
		// list: neither may change what replay --verify recomputes.
		fresh := projector.Hash(projector.New(conv))
		emptied := build(t,
			events.UserAppended{BlockID: "u"},
			events.DataSet{Values: map[string]string{"a": "1"}},
			events.BlocksRemoved{BlockIDs: []string{"u"}, Reason: "x"},
			events.DataSet{Unset: []string{"a"}},
		)
		assert.Equal(t, fresh, projector.Hash(emptied))
		assert.Equal(t, fresh, projector.Hash(msgpackRoundTrip(t, emptied)))
		assert.Equal(t, fresh, projector.Hash(&projector.Turn{Blocks: []projector.Block{}, Data: map[string]string{}}))
	})

	t.Run("unset data survives a snapshot", func(t *testing.T) {
		turn := build(t,
			events.UserAppended{BlockID: "u"},
			events.DataSet{Values: map[string]string{"a": "1"}},
			events.DataSet{Unset: []string{"a"}},
		)
		assert.Equal(t, projector.Hash(turn), projector.Hash(msgpackRoundTrip(t, turn)))
		assertSameTurn(t, turn, msgpackRoundTrip(t, turn))
	})
}

func TestHashText(t *testing.T) {
	assert.Equal(t, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", projector.HashText(""))
	assert.Equal(t, projector.HashText("be brief"), projector.HashText("be brief"))
	assert.NotEqual(t, projector.HashText("be brief"), projector.HashText("be brief "))
	// Long texts are hashed in pieces: the same SHA-256 all the same.
	for _, n := range []int{255, 256, 257, 511, 512, 513, 5000} {
		s := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		sum := sha256.Sum256([]byte(s))
		assert.Equal(t, hex.EncodeToString(sum[:]), projector.HashText(s), "%d bytes", len(s))
	}
}

// helperT is what the round-trip helpers need of a test: *testing.T or
// *rapid.T.
type helperT interface {
	require.TestingT
	Helper()
}

// msgpackRoundTrip encodes a Turn the way the snapshot cache stores it and
// decodes it again.
func msgpackRoundTrip(t helperT, turn *projector.Turn) *projector.Turn {
	t.Helper()
	data, err := msgpack.Marshal(turn)
	require.NoError(t, err)
	var out projector.Turn
	require.NoError(t, msgpack.Unmarshal(data, &out))
	return &out
}

// jsonRoundTrip encodes a Turn as an export does and decodes it again.
func jsonRoundTrip(t *testing.T, turn *projector.Turn) *projector.Turn {
	t.Helper()
	data, err := json.Marshal(turn)
	require.NoError(t, err)
	var out projector.Turn
	require.NoError(t, json.Unmarshal(data, &out))
	return &out
}
