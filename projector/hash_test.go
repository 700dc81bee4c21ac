package projector_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"pgregory.net/rapid"
)

// Hashes of base(t) and of an empty Turn that turnlog recorded in the v1
// format, before v2 existed (computed by the v1 code at commit 96659c2).
const (
	baseV1  = "4d5018802922e8b42a3249dfc70082c716e4fca1a66aacf0f6390f60d4213665"
	emptyV1 = "cc9f544638df016a32ea9f13da2bdc4b6fdf98ff5b19654b18761f4e3b3e5aa7"
	// baseV2 freezes the v2 format: a change to it breaks every recorded
	// hash and needs a v3.
	baseV2 = "v2:8606615c93ef2c547e0034cf61684c3f71d61530eb9ffcdb2c9986dac9cbe79e"
)

// refHash is Hash written out from its documentation, without the
// projector's code or cache: the v2 format is what the doc comment says.
func refHash(turn *projector.Turn) string {
	str := func(buf []byte, s string) []byte {
		return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
	}
	strMap := func(buf []byte, m map[string]string) []byte {
		buf = binary.AppendUvarint(buf, uint64(len(m)))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			buf = str(str(buf, k), m[k])
		}
		return buf
	}
	out := str(nil, "turnlog.turn.v2")
	out = binary.AppendUvarint(out, uint64(len(turn.Blocks)))
	for _, b := range turn.Blocks {
		l := str(nil, b.ID)
		l = str(l, string(b.Kind))
		l = str(l, b.Text)
		l = str(l, string(b.Trust))
		l = strMap(l, b.Meta)
		l = str(l, b.CallID)
		l = str(l, b.ToolName)
		l = str(l, b.Arguments)
		isError := uint64(0)
		if b.IsError {
			isError = 1
		}
		l = binary.AppendUvarint(l, isError)
		l = str(l, b.Encrypted)
		sum := sha256.Sum256(l)
		out = append(out, sum[:]...)
	}
	out = strMap(out, turn.Data)
	sum := sha256.Sum256(out)
	return "v2:" + hex.EncodeToString(sum[:])
}

// TestHashIncremental checks that the digests a Turn caches never make
// Hash differ from hashing the same Turn folded afresh from its events
// (which has no cache), at every step of random histories, and that a
// clone's cache and its original's stay independent while both go on.
func TestHashIncremental(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// eager is hashed after every event; lazy only now and then, so
		// that several changes pile up between two of its hashes.
		eager, lazy := projector.New(conv), projector.New(conv)
		var log []events.Event
		step := 0
		// next draws an event valid against turn (sometimes, first, an
		// invalid one, which must leave the cache as it was) and applies
		// it to every Turn in also as well.
		next := func(g *gen, turn *projector.Turn, log *[]events.Event, also ...*projector.Turn) {
			if rapid.IntRange(0, 5).Draw(t, "try an invalid event") == 0 {
				if e, wantErr, ok := g.invalid(); ok {
					require.ErrorIs(t, projector.Apply(turn, e), wantErr)
				}
			}
			step++
			e := events.New(conv, "req", step, "rapid", g.valid())
			for _, tu := range append([]*projector.Turn{turn}, also...) {
				require.NoError(t, projector.Apply(tu, e), "%s", e.Type)
			}
			*log = append(*log, e)
		}
		// check compares turn's hash with the hash of a fresh fold of log.
		check := func(turn *projector.Turn, log []events.Event, what string) {
			fresh := fold(t, log)
			require.Zero(t, projector.CachedDigests(fresh), "a fold caches no digest")
			want := projector.Hash(fresh)
			require.Equal(t, refHash(fresh), want, "Hash follows its documented layout")
			require.Equal(t, want, projector.Hash(turn), "%s after %d events: the cached digests give another hash than a fresh fold", what, len(log))
			require.Equal(t, len(turn.Blocks), projector.CachedDigests(turn), "%s: Hash caches every block's digest", what)
		}

		g := &gen{t: t, turn: eager}
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for range steps {
			next(g, eager, &log, lazy)
			check(eager, log, "eager")
			if rapid.IntRange(0, 3).Draw(t, "hash lazy") == 0 {
				check(lazy, log, "lazy")
			}
		}

		// Clone either (lazy's cache may be behind), then go on with both
		// the original and the clone, each with its own events. The gens
		// start from the same counter, so the two Turns get blocks of the
		// same IDs with other contents: a shared cache would show.
		orig := eager
		if rapid.Bool().Draw(t, "clone lazy") {
			orig = lazy
			if rapid.Bool().Draw(t, "hash lazy before cloning") {
				check(lazy, log, "lazy")
			}
		}
		clone := orig.Clone()
		cloneLog := slices.Clone(log)
		og := &gen{t: t, turn: orig, next: g.next}
		cg := &gen{t: t, turn: clone, next: g.next}
		for range rapid.IntRange(1, 20).Draw(t, "steps after the clone") {
			if rapid.Bool().Draw(t, "advance the clone") {
				next(cg, clone, &cloneLog)
			} else {
				next(og, orig, &log)
			}
			check(orig, log, "original")
			check(clone, cloneLog, "clone")
		}

		// The cache is not part of the Turn's encoding.
		snap := msgpackRoundTrip(t, orig)
		assert.Zero(t, projector.CachedDigests(snap))
		assert.Equal(t, projector.Hash(orig), projector.Hash(snap))
	})
}

func TestHashFormat(t *testing.T) {
	ref := base(t)
	assert.Equal(t, baseV2, projector.Hash(ref))
	assert.Equal(t, refHash(ref), projector.Hash(ref))
	assert.Equal(t, baseV1, projector.HashV1(ref))
	assert.Equal(t, emptyV1, projector.HashV1(projector.New(conv)))
	assert.True(t, strings.HasPrefix(projector.Hash(projector.New(conv)), "v2:"))
}

func TestHashMatches(t *testing.T) {
	tests := []struct {
		name     string
		turn     func(t testing.TB) *projector.Turn
		recorded string
		want     bool
	}{
		{name: "v2, recorded now", turn: base, recorded: baseV2, want: true},
		{name: "v1, recorded before v2", turn: base, recorded: baseV1, want: true},
		{name: "v1 of the empty Turn", turn: func(testing.TB) *projector.Turn { return projector.New(conv) }, recorded: emptyV1, want: true},
		{name: "v1 on a Turn whose digests are cached", turn: func(t testing.TB) *projector.Turn {
			turn := base(t)
			projector.Hash(turn)
			return turn
		}, recorded: baseV1, want: true},
		{name: "v1 of another Turn", turn: func(testing.TB) *projector.Turn { return projector.New(conv) }, recorded: baseV1},
		{name: "v2 of another Turn", turn: func(testing.TB) *projector.Turn { return projector.New(conv) }, recorded: baseV2},
		{name: "v1 digits under the v2 prefix", turn: base, recorded: "v2:" + baseV1},
		{name: "v2 digits without the prefix", turn: base, recorded: strings.TrimPrefix(baseV2, "v2:")},
		{name: "an unknown version", turn: base, recorded: "v3:" + strings.TrimPrefix(baseV2, "v2:")},
		{name: "upper-case digits", turn: base, recorded: strings.ToUpper(baseV1)},
		{name: "empty", turn: base, recorded: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, projector.HashMatches(tc.turn(t), tc.recorded))
		})
	}
}

func TestHashMatchesTampered(t *testing.T) {
	// What a tampered log re-projects to: one block of base(t) differs.
	tampered := []struct {
		name   string
		change events.Payload
	}{
		{name: "the system prompt's text", change: events.SystemPromptReplaced{BlockID: "s1", Previous: "be brief", Text: "obey the user"}},
		{name: "a block's meta", change: events.BlockAnnotated{BlockID: "u1", Meta: map[string]string{events.MetaSection: "user_context"}}},
		{name: "a block split in two", change: events.BlockSplit{BlockID: "l1", Into: []events.Block{{ID: "l1", Kind: events.KindLLMText, Text: "do"}, {ID: "l2", Kind: events.KindLLMText, Text: "ne"}}}},
		{name: "a block removed", change: events.BlocksRemoved{BlockIDs: []string{"r1"}, Reason: "x"}},
		{name: "two blocks swapped", change: events.BlocksReordered{Order: []string{"s1", "u1", "r1", "t1", "l1", "t2"}}},
	}
	for _, tc := range tampered {
		t.Run(tc.name, func(t *testing.T) {
			turn := base(t)
			projector.Hash(turn) // digests cached before the change
			require.NoError(t, projector.Apply(turn, ev(tc.change)))
			assert.False(t, projector.HashMatches(turn, baseV2), "v2")
			assert.False(t, projector.HashMatches(turn, baseV1), "v1")
		})
	}
}

func TestHashAsUnknownVersion(t *testing.T) {
	for _, recorded := range []string{"v3:00", "v10:ab", ":", "sha512:x", strings.Repeat("w", 100) + ":1"} {
		_, err := projector.HashAs(base(t), recorded)
		require.ErrorIs(t, err, projector.ErrUnknownHashVersion, "%q", recorded)
		assert.Contains(t, err.Error(), "v2 and unprefixed (v1)", "the message says what this build knows")
		assert.Less(t, len(err.Error()), 200, "a long prefix is cut")
		assert.False(t, projector.HashMatches(base(t), recorded))
	}
	h, err := projector.HashAs(base(t), baseV1)
	require.NoError(t, err)
	assert.Equal(t, baseV1, h)
	h, err = projector.HashAs(base(t), "v2:anything")
	require.NoError(t, err)
	assert.Equal(t, baseV2, h)
}

// TestHashOutsideApply: the cache is positional and checks IDs, so Turns
// built or cut by hand (imports, exports, tests) still hash by content.
func TestHashOutsideApply(t *testing.T) {
	t.Run("blocks with the same ID", func(t *testing.T) {
		turn := &projector.Turn{Blocks: []projector.Block{
			{ID: "x", Kind: events.KindUser, Text: "one"},
			{ID: "x", Kind: events.KindUser, Text: "two"},
			{Kind: events.KindUser, Text: "no ID"},
			{Kind: events.KindUser, Text: "no ID either"},
		}}
		assert.Equal(t, refHash(turn), projector.Hash(turn))
		assert.Equal(t, refHash(turn), projector.Hash(turn), "with the digests cached")
	})
	t.Run("blocks cut, then an ID taken again", func(t *testing.T) {
		turn := base(t)
		projector.Hash(turn)
		turn.Blocks = turn.Blocks[:2]
		require.NoError(t, projector.Apply(turn, ev(events.LLMTextAppended{BlockID: "r1", Text: "another r1"})))
		assert.Equal(t, refHash(turn), projector.Hash(turn))
	})
	t.Run("blocks swapped", func(t *testing.T) {
		turn := base(t)
		projector.Hash(turn)
		turn.Blocks[0], turn.Blocks[1] = turn.Blocks[1], turn.Blocks[0]
		assert.Equal(t, refHash(turn), projector.Hash(turn))
	})
	// A middleware that redacts a block in place (not through an event)
	// had the cached digest prove the text the block held before: the
	// input hash of a model call that was sent the redacted text matched
	// the log, and replay --verify passed.
	t.Run("a block's text changed in place", func(t *testing.T) {
		turn := base(t)
		projector.Hash(turn)
		turn.Blocks[0].Text = strings.Replace(turn.Blocks[0].Text, turn.Blocks[0].Text[:1], "#", 1)
		assert.Equal(t, refHash(turn), projector.Hash(turn))
	})
	t.Run("a tool call's arguments, a block's kind, its trust changed in place", func(t *testing.T) {
		turn := base(t)
		projector.Hash(turn)
		turn.Blocks[1].Arguments += " "
		assert.Equal(t, refHash(turn), projector.Hash(turn))
		turn.Blocks[1].Kind = events.KindUser
		assert.Equal(t, refHash(turn), projector.Hash(turn))
		turn.Blocks[2].Trust = events.Trusted
		assert.Equal(t, refHash(turn), projector.Hash(turn))
	})
	t.Run("a block replaced by another", func(t *testing.T) {
		turn := base(t)
		projector.Hash(turn)
		turn.Blocks[2] = projector.Block{ID: "new", Kind: events.KindUser, Text: "new"}
		assert.Equal(t, refHash(turn), projector.Hash(turn))
	})
}

// TestApplyKeepsDigests: an event drops the cached digests of the blocks it
// adds or changes and of no other, which is what makes Hash cost the tail
// of a Turn rather than all of it.
func TestApplyKeepsDigests(t *testing.T) {
	tests := []struct {
		name   string
		change events.Payload
		// kept is how many of base(t)'s six digests stay cached.
		kept int
	}{
		{name: "an append", change: events.UserAppended{BlockID: "u2", Text: "more"}, kept: 6},
		{name: "a system prompt inserted first", change: events.SystemPromptSet{BlockID: "s0", Text: "x", Index: 0}, kept: 6},
		{name: "a system prompt replaced", change: events.SystemPromptReplaced{BlockID: "s1", Previous: "be brief", Text: "x"}, kept: 5},
		{name: "an annotation", change: events.BlockAnnotated{BlockID: "t1", Meta: map[string]string{"a": "1"}}, kept: 5},
		{name: "a reorder", change: events.BlocksReordered{Order: []string{"l1", "t2", "t1", "r1", "u1", "s1"}}, kept: 6},
		{name: "a removal", change: events.BlocksRemoved{BlockIDs: []string{"r1", "t2"}, Reason: "x"}, kept: 4},
		{name: "a split that keeps its ID", change: events.BlockSplit{BlockID: "u1", Into: []events.Block{{ID: "u1", Kind: events.KindUser, Text: "hel"}, {ID: "u1b", Kind: events.KindUser, Text: "lo"}}}, kept: 5},
		{name: "a compaction with a summary", change: events.TurnCompacted{Removed: []string{"u1", "r1"}, Summary: &events.Block{ID: "u1", Kind: events.KindOther, Text: "sum"}}, kept: 4},
		{name: "data", change: events.DataSet{Values: map[string]string{"tz": "CET"}}, kept: 6},
		{name: "a fact", change: events.RequestCompleted{Inferences: 1}, kept: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turn := base(t)
			projector.Hash(turn)
			require.Equal(t, 6, projector.CachedDigests(turn))
			require.NoError(t, projector.Apply(turn, ev(tc.change)))
			assert.Equal(t, tc.kept, projector.CachedDigests(turn))
			assert.Equal(t, refHash(turn), projector.Hash(turn))
			assert.Equal(t, len(turn.Blocks), projector.CachedDigests(turn))
		})
	}
	t.Run("a clone keeps them", func(t *testing.T) {
		turn := base(t)
		projector.Hash(turn)
		assert.Equal(t, 6, projector.CachedDigests(turn.Clone()))
	})
}

// TestHashCoversOpaqueReasoning: what reasoning providers store and send
// back verbatim (encrypted content, signatures in Encrypted, item IDs and
// summary parts in Meta) is part of the hash, so one changed byte of it is
// a mismatch for replay --verify, in both formats.
func TestHashCoversOpaqueReasoning(t *testing.T) {
	turn := func(enc, meta string) *projector.Turn {
		return &projector.Turn{Conversation: "c", Blocks: []events.Block{
			{ID: "u", Kind: events.KindUser, Text: "q"},
			{ID: "r", Kind: events.KindReasoning, Text: "summary", Encrypted: enc, Meta: map[string]string{"responses.item_id": meta}},
			{ID: "a", Kind: events.KindLLMText, Text: "answer"},
		}}
	}
	orig := turn("gAAAABsecret", "rs_1")
	v2 := projector.Hash(orig)
	v1, err := projector.HashAs(orig, "0") // an unprefixed hash names v1
	require.NoError(t, err)
	for name, changed := range map[string]*projector.Turn{
		"a byte of the encrypted content": turn("gAAAABsecreT", "rs_1"),
		"a byte of the item ID":           turn("gAAAABsecret", "rs_2"),
	} {
		assert.NotEqual(t, v2, projector.Hash(changed), name)
		assert.False(t, projector.HashMatches(changed, v2), name)
		assert.False(t, projector.HashMatches(changed, v1), name)
	}
}
