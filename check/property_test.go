package check_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/eventgen"
	"github.com/turnlog/turnlog/projector"
	"pgregory.net/rapid"
)

// blocks draws an arbitrary Turn's blocks from a small alphabet, so that
// repeated contents, repeated call IDs, reasoning anywhere and several
// system blocks are common.
func blocks(t *rapid.T, valid bool) []events.Block {
	n := rapid.IntRange(0, 40).Draw(t, "blocks")
	out := make([]events.Block, n)
	for i := range out {
		b := events.Block{ID: fmt.Sprint("b", i),
			Kind: rapid.SampledFrom([]events.Kind{events.KindSystem, events.KindUser, events.KindLLMText, events.KindToolCall,
				events.KindToolResult, events.KindReasoning, events.KindOther}).Draw(t, "kind"),
			Text: rapid.SampledFrom([]string{"", "a", "b", "same again"}).Draw(t, "text")}
		if b.Kind == events.KindToolCall || b.Kind == events.KindToolResult {
			b.CallID = rapid.SampledFrom([]string{"", "k1", "k2"}).Draw(t, "call")
			if valid && b.CallID == "" {
				b.CallID = "k3"
			}
			if b.Kind == events.KindToolCall {
				b.ToolName = "lookup"
			}
		}
		if rapid.IntRange(0, 5).Draw(t, "meta") == 0 {
			b.Meta = map[string]string{rapid.SampledFrom([]string{"globalprompt.id", "roles.split_from", events.MetaSection}).Draw(t, "key"): "b0"}
		}
		out[i] = b
	}
	return out
}

// TestCheckNeverPanics: arbitrary Turns, and random valid histories with
// the actors whose moves are allowed, give findings that name a model
// call, its event and a known rule, and never a panic.
func TestCheckNeverPanics(t *testing.T) {
	actors := []string{"eventgen", "engine", "ordering", "reasoningguard", "compaction", "operator:ada", "globalprompt", "import"}
	rapid.Check(t, func(t *rapid.T) {
		turn := projector.New("c")
		var evs []events.Event
		add := func(e events.Event) {
			require.NoError(t, projector.Apply(turn, e))
			evs = append(evs, e)
		}
		add(events.New("c", "r", 0, "import", events.ConversationStarted{Blocks: blocks(t, true)}))
		add(events.New("c", "r", 1, "engine", events.InferenceStarted{InferenceID: "i0", Model: "m", InputHash: projector.Hash(turn)}))
		for step := range rapid.IntRange(0, 30).Draw(t, "steps") {
			for _, e := range eventgen.Step(t, turn.Clone(), "r", step+2) {
				e.Actor = rapid.SampledFrom(actors).Draw(t, "actor")
				add(e)
			}
		}
		aside := check.WithAsideInput(func(_ *projector.Turn, _ events.InferenceStarted) (*projector.Turn, error) {
			return &projector.Turn{Blocks: blocks(t, false)}, nil
		})
		c := check.New(aside)
		all := []check.Finding{}
		for i, e := range evs {
			fs, err := c.Feed(e)
			require.NoError(t, err)
			for _, f := range fs {
				assert.Equal(t, i+1, f.N, "a finding is at the inference.started that fed it")
				assert.Equal(t, c.Calls(), f.Call)
				assert.Contains(t, check.Rules, f.Rule)
				assert.NotNil(t, f.Blocks)
				assert.NotEmpty(t, f.Detail)
			}
			all = append(all, fs...)
		}
		whole, calls, err := check.Conversation(evs, aside)
		require.NoError(t, err)
		assert.Equal(t, c.Calls(), calls)
		assert.Equal(t, all, whole, "fed one by one or whole, the same findings")
		// A caller that folds the events itself gets the same findings.
		own, folded := check.New(aside), projector.New("c")
		observed := []check.Finding{}
		for i, e := range evs {
			require.NoError(t, projector.Apply(folded, e))
			observed = append(observed, own.Observe(e, i+1, folded)...)
		}
		assert.Equal(t, all, observed, "Observe with the caller's fold finds what Feed finds")
	})
}

// TestRunsProperties: the two copies of a run have the same content, block
// for block, the first wholly before the second, and runs do not overlap.
func TestRunsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := blocks(t, false)
		runs := check.Runs(bs)
		used := map[int]bool{}
		for _, r := range runs {
			require.Len(t, r.Again, len(r.First))
			require.GreaterOrEqual(t, len(r.First), 2)
			assert.Less(t, r.First[len(r.First)-1], r.Again[0])
			assert.True(t, slices.IsSorted(r.First) && slices.IsSorted(r.Again))
			for k := range r.First {
				a, b := bs[r.First[k]], bs[r.Again[k]]
				a.ID, b.ID, a.Meta, b.Meta = "", "", nil, nil
				assert.Equal(t, a, b)
				assert.False(t, used[r.Again[k]], "runs overlap")
				used[r.Again[k]] = true
			}
		}
	})
}
