package projector_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"pgregory.net/rapid"
)

// gen draws events that are valid (or, on request, invalid) against the
// current Turn, so that references to blocks point at real ones.
type gen struct {
	t    *rapid.T
	turn *projector.Turn
	next int
}

// id returns an ID not in the Turn: usually a fresh one, sometimes one a
// removed block had, which a later block may take again.
func (g *gen) id() string {
	if rapid.IntRange(0, 3).Draw(g.t, "reuse") == 0 {
		name := fmt.Sprint("x", rapid.IntRange(0, 4).Draw(g.t, "pool"))
		if g.turn.Index(name) < 0 {
			return name
		}
	}
	g.next++
	return fmt.Sprint("b", g.next)
}

func (g *gen) text(label string) string {
	return rapid.StringMatching(`[a-z ]{0,8}`).Draw(g.t, label)
}

// meta draws nil, an empty map or a few entries; withEmpty allows empty
// values, which delete a key when merged.
func (g *gen) meta(label string, withEmpty bool) map[string]string {
	switch rapid.IntRange(0, 3).Draw(g.t, label+" shape") {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{}
	for i, n := 0, rapid.IntRange(1, 3).Draw(g.t, label+" size"); i < n; i++ {
		k := rapid.SampledFrom([]string{events.MetaSection, events.MetaSystemPromptSource, "a", "b"}).Draw(g.t, label+" key")
		v := g.text(label + " value")
		if v == "" && !withEmpty {
			v = "v"
		}
		m[k] = v
	}
	return m
}

// pick draws one block of the Turn, which must not be empty.
func (g *gen) pick(label string) projector.Block {
	return g.turn.Blocks[rapid.IntRange(0, len(g.turn.Blocks)-1).Draw(g.t, label)]
}

// subset draws a non-empty set of the Turn's block IDs in random order.
func (g *gen) subset(label string) []string {
	n := len(g.turn.Blocks)
	idx := rapid.SliceOfNDistinct(rapid.IntRange(0, n-1), 1, n, rapid.ID[int]).Draw(g.t, label)
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = g.turn.Blocks[j].ID
	}
	return out
}

func (g *gen) block(label string) events.Block {
	b := events.Block{
		ID:    g.id(),
		Kind:  rapid.SampledFrom([]events.Kind{events.KindSystem, events.KindUser, events.KindLLMText, events.KindReasoning, events.KindOther, events.KindToolCall, events.KindToolResult}).Draw(g.t, label+" kind"),
		Text:  g.text(label + " text"),
		Trust: rapid.SampledFrom([]events.Trust{events.Untrusted, events.Trusted}).Draw(g.t, label+" trust"),
		Meta:  g.meta(label+" meta", false),
	}
	if b.Kind == events.KindToolCall || b.Kind == events.KindToolResult {
		b.CallID = g.id()
	}
	if b.Kind == events.KindToolCall {
		b.ToolName = "f"
	}
	return b
}

func (g *gen) systemBlocks() []projector.Block {
	var out []projector.Block
	for _, b := range g.turn.Blocks {
		if b.Kind == events.KindSystem {
			out = append(out, b)
		}
	}
	return out
}

// valid draws a payload that Apply must accept.
func (g *gen) valid() events.Payload {
	t, turn := g.t, g.turn
	n := len(turn.Blocks)
	ops := []string{"user", "llm", "reasoning", "tool call", "tool result", "set", "insert", "data", "fact", "start"}
	if n > 0 {
		ops = append(ops, "reorder", "remove", "annotate", "split", "compact")
	}
	if len(g.systemBlocks()) > 0 {
		ops = append(ops, "replace")
	}
	if n == 0 && len(turn.Data) == 0 {
		ops = append(ops, "fork")
	}
	switch rapid.SampledFrom(ops).Draw(t, "op") {
	case "user":
		return events.UserAppended{BlockID: g.id(), Text: g.text("text"), Trust: rapid.SampledFrom([]events.Trust{events.Untrusted, events.Trusted}).Draw(t, "trust"), Meta: g.meta("meta", true)}
	case "llm":
		return events.LLMTextAppended{BlockID: g.id(), Text: g.text("text"), Meta: g.meta("meta", true)}
	case "reasoning":
		return events.ReasoningAppended{BlockID: g.id(), Text: g.text("text"), Encrypted: g.text("enc"), Meta: g.meta("meta", true)}
	case "tool call":
		return events.ToolCalled{BlockID: g.id(), CallID: g.id(), Name: "lookup", Arguments: `{"q":"` + g.text("args") + `"}`, Meta: g.meta("meta", true)}
	case "tool result":
		return events.ToolResult{BlockID: g.id(), CallID: g.id(), Text: g.text("text"), IsError: rapid.Bool().Draw(t, "is error"), Meta: g.meta("meta", true)}
	case "set":
		return events.SystemPromptSet{BlockID: g.id(), Text: g.text("text"), Index: rapid.IntRange(0, n).Draw(t, "index"), Trust: events.Trusted, Meta: g.meta("meta", true)}
	case "insert":
		return events.BlockInserted{Index: rapid.IntRange(0, n).Draw(t, "index"), Reason: "test", Block: events.Block{ID: g.id(),
			Kind: rapid.SampledFrom([]events.Kind{events.KindUser, events.KindLLMText, events.KindOther}).Draw(t, "kind"),
			Text: g.text("text"), Meta: g.meta("meta", true)}}
	case "replace":
		sp := rapid.SampledFrom(g.systemBlocks()).Draw(t, "system block")
		return events.SystemPromptReplaced{BlockID: sp.ID, Previous: sp.Text, Text: g.text("text"), Meta: g.meta("meta", true)}
	case "reorder":
		perm := rapid.Permutation(turn.Blocks).Draw(t, "perm")
		order := make([]string, len(perm))
		for i, b := range perm {
			order[i] = b.ID
		}
		return events.BlocksReordered{Order: order}
	case "remove":
		return events.BlocksRemoved{BlockIDs: g.subset("remove"), Reason: "test"}
	case "annotate":
		m := g.meta("annotation", true)
		if len(m) == 0 {
			m = map[string]string{"flag": "1"}
		}
		return events.BlockAnnotated{BlockID: g.pick("annotate").ID, Meta: m}
	case "split":
		b := g.pick("split")
		into := make([]events.Block, rapid.IntRange(1, 3).Draw(t, "into"))
		keep := rapid.IntRange(-1, len(into)-1).Draw(t, "keep own ID at")
		for i := range into {
			into[i] = g.block("into")
			if i == keep {
				into[i].ID = b.ID
			}
		}
		// Fresh IDs drawn from the reuse pool may repeat within one split.
		seen := map[string]bool{}
		for i := range into {
			for seen[into[i].ID] {
				g.next++
				into[i].ID = fmt.Sprint("b", g.next)
			}
			seen[into[i].ID] = true
		}
		return events.BlockSplit{BlockID: b.ID, Into: into}
	case "compact":
		removed := g.subset("compact")
		p := events.TurnCompacted{Removed: removed, Reason: "test"}
		if rapid.Bool().Draw(t, "summary") {
			s := g.block("summary")
			if rapid.Bool().Draw(t, "summary reuses a removed ID") {
				s.ID = rapid.SampledFrom(removed).Draw(t, "summary ID")
			}
			p.Summary = &s
		}
		return p
	case "data":
		p := events.DataSet{}
		if rapid.Bool().Draw(t, "values") {
			p.Values = map[string]string{rapid.SampledFrom([]string{"tz", "page", "profile"}).Draw(t, "key"): g.text("value")}
		}
		if len(p.Values) == 0 || rapid.Bool().Draw(t, "unset") {
			p.Unset = []string{rapid.SampledFrom([]string{"tz", "page", "profile", "absent"}).Draw(t, "unset key")}
		}
		return p
	case "fact":
		return rapid.SampledFrom([]events.Payload{
			events.InferenceStarted{InferenceID: "i", Model: "m", InputHash: projector.Hash(turn), Blocks: n},
			events.InferenceFinished{InferenceID: "i", PromptTokens: 3},
			events.InferenceFailed{InferenceID: "i", Error: "x", Transient: true},
			events.InferenceFailed{InferenceID: "i", Error: "cut", Partial: []events.Block{{ID: "p1", Kind: events.KindLLMText, Text: "Hel"}}},
			events.RequestCompleted{Inferences: 1},
			events.RequestFailed{Reason: "x"},
		}).Draw(t, "fact")
	case "start":
		return events.ConversationStarted{Profile: "p"}
	case "fork":
		blocks := make([]events.Block, rapid.IntRange(0, 4).Draw(t, "fork blocks"))
		for i := range blocks {
			blocks[i] = g.block("fork")
			g.next++
			blocks[i].ID = fmt.Sprint("b", g.next) // distinct within the fork
		}
		return events.ConversationStarted{ForkedFrom: "origin", ForkedAt: 3, Blocks: blocks, Data: g.meta("fork data", true)}
	}
	panic("unreachable")
}

// invalid draws an event that Apply must reject, and the error it must
// wrap. ok is false when the Turn is too small for any.
func (g *gen) invalid() (events.Event, error, bool) {
	t, turn := g.t, g.turn
	n := len(turn.Blocks)
	if n < 2 {
		return events.Event{}, nil, false
	}
	ids := ids(turn)
	mk := func(p events.Payload) events.Event { return events.New(conv, "req-x", 0, "rapid", p) }
	switch rapid.SampledFrom([]string{
		"duplicate append", "wrong previous", "reorder missing", "reorder duplicate", "reorder short",
		"remove missing", "annotate missing", "index past the end", "split into a taken ID", "summary with a kept ID",
		"insert past the end", "insert a taken ID",
		"fork on content", "other conversation", "unknown type", "newer version",
	}).Draw(t, "invalid op") {
	case "duplicate append":
		return mk(events.LLMTextAppended{BlockID: g.pick("dup").ID}), projector.ErrDuplicateBlock, true
	case "wrong previous":
		sp := g.pick("not previous")
		if sp.Kind != events.KindSystem {
			return mk(events.SystemPromptReplaced{BlockID: sp.ID, Previous: sp.Text}), projector.ErrMismatch, true
		}
		return mk(events.SystemPromptReplaced{BlockID: sp.ID, Previous: sp.Text + "!"}), projector.ErrMismatch, true
	case "reorder missing":
		order := slices.Clone(ids)
		order[rapid.IntRange(0, n-1).Draw(t, "slot")] = "missing"
		return mk(events.BlocksReordered{Order: order}), projector.ErrMissingBlock, true
	case "reorder duplicate":
		order := slices.Clone(ids)
		order[0] = order[n-1]
		return mk(events.BlocksReordered{Order: order}), projector.ErrBadOrder, true
	case "reorder short":
		return mk(events.BlocksReordered{Order: ids[1:]}), projector.ErrBadOrder, true
	case "remove missing":
		return mk(events.BlocksRemoved{BlockIDs: append(g.subset("remove"), "missing"), Reason: "x"}), projector.ErrMissingBlock, true
	case "annotate missing":
		return mk(events.BlockAnnotated{BlockID: "missing", Meta: map[string]string{"a": "1"}}), projector.ErrMissingBlock, true
	case "index past the end":
		return mk(events.SystemPromptSet{BlockID: g.id(), Index: n + 1}), projector.ErrMismatch, true
	case "insert past the end":
		return mk(events.BlockInserted{Index: n + 1, Block: events.Block{ID: g.id(), Kind: events.KindOther}}), projector.ErrMismatch, true
	case "insert a taken ID":
		return mk(events.BlockInserted{Index: rapid.IntRange(0, n).Draw(t, "index"), Block: events.Block{ID: ids[0], Kind: events.KindUser}}), projector.ErrDuplicateBlock, true
	case "split into a taken ID":
		return mk(events.BlockSplit{BlockID: ids[0], Into: []events.Block{{ID: ids[1], Kind: events.KindUser}}}), projector.ErrDuplicateBlock, true
	case "summary with a kept ID":
		return mk(events.TurnCompacted{Removed: []string{ids[0]}, Summary: &events.Block{ID: ids[1], Kind: events.KindOther}}), projector.ErrDuplicateBlock, true
	case "fork on content":
		return mk(events.ConversationStarted{Blocks: []events.Block{{ID: g.id(), Kind: events.KindUser}}}), projector.ErrMismatch, true
	case "other conversation":
		e := mk(events.UserAppended{BlockID: g.id()})
		e.Conversation = "other"
		return e, projector.ErrMismatch, true
	case "unknown type":
		e := mk(events.UserAppended{BlockID: g.id()})
		e.Type = "nope.happened"
		return e, events.ErrUnknownEvent, true
	case "newer version":
		e := mk(events.UserAppended{BlockID: g.id()})
		e.Version++
		return e, events.ErrNewerVersion, true
	}
	panic("unreachable")
}

// checkInvariants asserts what must hold after every applied event.
func checkInvariants(t *rapid.T, turn *projector.Turn, applied int) {
	require.Equal(t, applied, turn.Events, "Events counts the applied events")
	seen := map[string]bool{}
	firstSystem := -1
	for i, b := range turn.Blocks {
		require.False(t, seen[b.ID], "block ID %s appears twice", b.ID)
		seen[b.ID] = true
		require.Equal(t, i, turn.Index(b.ID), "Index(%s)", b.ID)
		require.NoError(t, b.Validate(), "block %d", i)
		require.True(t, b.Meta == nil || len(b.Meta) > 0, "block %s has an empty, non-nil Meta", b.ID)
		if b.Kind == events.KindSystem && firstSystem < 0 {
			firstSystem = i
		}
	}
	require.True(t, turn.Data == nil || len(turn.Data) > 0, "empty, non-nil Data")
	_, i, ok := turn.SystemPrompt()
	require.Equal(t, firstSystem >= 0, ok)
	require.Equal(t, firstSystem, i)
}

// fold is a fresh Turn of conv with evs applied.
func fold(t require.TestingT, evs []events.Event) *projector.Turn {
	turn := projector.New(conv)
	require.NoError(t, projector.ApplyAll(turn, evs))
	return turn
}

func TestFoldProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		turn := projector.New(conv)
		g := &gen{t: t, turn: turn}
		var applied []events.Event
		steps := rapid.IntRange(1, 50).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			if rapid.IntRange(0, 5).Draw(t, "try an invalid event") == 0 {
				if e, wantErr, ok := g.invalid(); ok {
					before := stateOf(turn)
					err := projector.Apply(turn, e)
					require.ErrorIs(t, err, wantErr, "%s", e.Type)
					require.Equal(t, before, stateOf(turn), "the rejected %s changed the turn", e.Type)
					checkInvariants(t, turn, len(applied))
					continue
				}
			}
			e := events.New(conv, "req", step, "rapid", g.valid())
			if err := projector.Apply(turn, e); err != nil {
				t.Fatalf("a valid %s was rejected: %v\n%#v", e.Type, err, e.Payload)
			}
			applied = append(applied, e)
			checkInvariants(t, turn, len(applied))
		}
		want := stateOf(turn)
		hash := projector.Hash(turn)

		// Determinism: the same events give the same Turn.
		again := fold(t, applied)
		assert.Equal(t, want, stateOf(again), "folding the same events again")
		assert.Equal(t, hash, projector.Hash(again))

		// Clone, then continue: the same as continuing, and the original
		// is untouched by what happens to the clone.
		k := rapid.IntRange(0, len(applied)).Draw(t, "clone at")
		orig := fold(t, applied[:k])
		atK := stateOf(orig)
		clone := orig.Clone()
		require.NoError(t, projector.ApplyAll(clone, applied[k:]))
		assert.Equal(t, atK, stateOf(orig), "continuing a clone changed the original")
		require.NoError(t, projector.ApplyAll(orig, applied[k:]))
		assert.Equal(t, want, stateOf(orig), "continue")
		assert.Equal(t, want, stateOf(clone), "clone, then continue")

		// What the log says: the events through the codec fold to the
		// same Turn as the in-memory events did.
		data, err := events.Encode(applied...)
		require.NoError(t, err)
		decoded, err := events.Decode(data)
		require.NoError(t, err)
		fromLog := fold(t, decoded)
		assert.Equal(t, want, stateOf(fromLog), "folding the decoded events")
		assert.Equal(t, hash, projector.Hash(fromLog))

		// A snapshot, then the tail: the same Turn and hash.
		snap := msgpackRoundTrip(t, fold(t, applied[:k]))
		require.NoError(t, projector.ApplyAll(snap, applied[k:]))
		assert.Equal(t, want, stateOf(snap), "snapshot, then the tail")
		assert.Equal(t, hash, projector.Hash(snap))
	})
}
