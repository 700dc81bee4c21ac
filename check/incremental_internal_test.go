package check

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/eventgen"
	"github.com/turnlog/turnlog/projector"
	"pgregory.net/rapid"
)

// TestIncrementalIsFromScratch: the findings a Checker computes from what
// it kept of the previous call are those it computes from scratch, on
// random conversations whose texts repeat often (so runs, duplicate
// prompts and reasoning faults are common) and whose history is moved,
// removed, compacted and replaced.
func TestIncrementalIsFromScratch(t *testing.T) {
	nonEmpty := 0
	rapid.Check(t, func(t *rapid.T) {
		turn := projector.New("c")
		c := New()
		c.verify = func(incremental, fresh []Finding) {
			nonEmpty += len(fresh)
			sortFindings(incremental)
			sortFindings(fresh)
			require.Equal(t, fresh, incremental)
		}
		drawConversation(t, turn, func(actor string, p events.Payload) {
			e := events.New("c", "r", 0, actor, p)
			if err := projector.Apply(turn, e); err != nil {
				return // drawn against a Turn it does not fit: skip it
			}
			_, err := c.Feed(e)
			require.NoError(t, err)
		})
	})
	assert.Positive(t, nonEmpty, "the conversations drawn must have findings to compare")
}

// drawConversation draws a conversation's events one by one, each given
// to feed with its actor, drawn against turn as it stands (which feed
// keeps): texts repeat often (so runs, duplicate prompts and reasoning
// faults are common), and history is moved, removed, compacted and
// replaced.
func drawConversation(t *rapid.T, turn *projector.Turn, feed func(actor string, p events.Payload)) {
	next := 0
	id := func() string { next++; return fmt.Sprint("b", next) }
	text := func() string { return rapid.SampledFrom([]string{"a", "b", "same again"}).Draw(t, "text") }
	callID := func() string { return rapid.SampledFrom([]string{"k1", "k2", "k3"}).Draw(t, "call id") }
	for range rapid.IntRange(1, 60).Draw(t, "events") {
		switch rapid.IntRange(0, 9).Draw(t, "what") {
		case 0:
			feed("app", events.UserAppended{BlockID: id(), Text: text()})
		case 1:
			feed("engine", events.LLMTextAppended{BlockID: id(), Text: text()})
		case 2:
			feed("engine", events.ReasoningAppended{BlockID: id(), Text: text()})
		case 3:
			feed("engine", events.ToolCalled{BlockID: id(), CallID: callID(), Name: "f"})
		case 4:
			feed("tools", events.ToolResult{BlockID: id(), CallID: callID(), Text: text()})
		case 5:
			feed("app", events.SystemPromptSet{BlockID: id(), Text: text(), Index: rapid.IntRange(0, len(turn.Blocks)).Draw(t, "index")})
		case 6, 7:
			feed("engine", events.InferenceStarted{InferenceID: id(), Model: "m", InputHash: "h"})
		default:
			actor := rapid.SampledFrom([]string{"app", "ordering", "compaction", "operator:ada"}).Draw(t, "actor")
			feed(actor, eventgen.Payload(t, turn))
		}
	}
}

// TestObservingIsFeeding: a Fed that observes the Turn its caller folds
// (the gateway's) finds what one that folds its own finds, event for
// event, and so does one rebuilt from the first events that way
// (RebuildObserving) and observing the rest.
func TestObservingIsFeeding(t *testing.T) {
	found := 0
	rapid.Check(t, func(t *rapid.T) {
		turn := projector.New("c")
		var evs []events.Event
		drawConversation(t, turn, func(actor string, p events.Payload) {
			e := events.New("c", "r", 0, actor, p)
			if projector.Apply(turn, e) == nil {
				evs = append(evs, e)
			}
		})
		fed := &Fed{Conversation: "c", Checker: New()}
		observing := &Fed{Conversation: "c", Checker: New()}
		folded := projector.New("c")
		want := make([][]Finding, len(evs))
		for i, e := range evs {
			var err error
			want[i], err = fed.Feed(e)
			require.NoError(t, err)
			require.NoError(t, projector.Apply(folded, e))
			found += len(want[i])
			require.Equal(t, want[i], observing.Observe(e, folded), "event %d", i)
		}
		require.Equal(t, fed.Events, observing.Events)
		// Rebuilt from each point of the conversation.
		for cut := range len(evs) + 1 {
			rebuilt, err := RebuildObserving("c", cut, eventsOf(evs...))
			require.NoError(t, err)
			require.Equal(t, cut, rebuilt.Events)
			folded := projector.New("c")
			require.NoError(t, projector.ApplyAll(folded, evs[:cut]))
			for i := cut; i < len(evs); i++ {
				require.NoError(t, projector.Apply(folded, evs[i]))
				require.Equal(t, want[i], rebuilt.Observe(evs[i], folded), "event %d, rebuilt from %d", i, cut)
			}
		}
	})
	assert.Positive(t, found, "the conversations drawn must have findings to compare")
}

// TestRunScannerIsRuns: resuming a scan on an input that keeps a prefix
// of the previous one finds what Runs finds from scratch.
func TestRunScannerIsRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s runScanner
		var prev []events.Block
		for range rapid.IntRange(1, 8).Draw(t, "inputs") {
			same := rapid.IntRange(0, len(prev)).Draw(t, "same")
			in := append([]events.Block{}, prev[:same]...)
			for range rapid.IntRange(0, 12).Draw(t, "new") {
				b := events.Block{ID: fmt.Sprint("x", len(in)), Kind: rapid.SampledFrom([]events.Kind{events.KindUser, events.KindLLMText, events.KindReasoning}).Draw(t, "kind"),
					Text: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "text")}
				in = append(in, b)
			}
			assert.Equal(t, Runs(in), s.update(in, same))
			prev = in
		}
	})
}

// A finding carried from the previous call names a block past the
// unchanged prefix: when a system prompt is inserted before that block,
// the finding is made again and says where the block is now (found by
// TestIncrementalIsFromScratch; the carried finding kept the old index).
func TestCarriedFindingFollowsItsBlock(t *testing.T) {
	turn := projector.New("c")
	c := New()
	var computed [][]Finding // each call's findings, incrementally
	c.verify = func(incremental, fresh []Finding) {
		sortFindings(incremental)
		sortFindings(fresh)
		require.Equal(t, fresh, incremental)
		computed = append(computed, slices.Clone(incremental))
	}
	feed := func(actor string, p events.Payload) {
		e := events.New("c", "r", 0, actor, p)
		require.NoError(t, projector.Apply(turn, e))
		_, err := c.Feed(e)
		require.NoError(t, err)
	}
	detail := func(fs []Finding) string {
		for _, f := range fs {
			if f.Rule == RuleReasoningWithoutFollower {
				return f.Detail
			}
		}
		return ""
	}
	feed("app", events.UserAppended{BlockID: "u1", Text: "a"})
	feed("engine", events.LLMTextAppended{BlockID: "t1", Text: "a"})
	feed("app", events.UserAppended{BlockID: "u2", Text: "b"})
	feed("app", events.UserAppended{BlockID: "u3", Text: "c"})
	feed("engine", events.ReasoningAppended{BlockID: "r", Text: "thought"})
	feed("engine", events.LLMTextAppended{BlockID: "t2", Text: "answer"})
	// The reasoning block moved to the front: t1 follows it, not t2.
	feed("ordering", events.BlocksReordered{Order: []string{"u1", "r", "t1", "u2", "u3", "t2"}})
	feed("engine", events.InferenceStarted{InferenceID: "i1", Model: "m", InputHash: "h"})
	feed("app", events.SystemPromptSet{BlockID: "s", Text: "be brief", Index: 3})
	feed("engine", events.InferenceStarted{InferenceID: "i2", Model: "m", InputHash: "h"})
	require.Len(t, computed, 2)
	assert.Contains(t, detail(computed[0]), "llm_text t2 at index 5")
	assert.Contains(t, detail(computed[1]), "llm_text t2 at index 6", "t2 moved one place down")
}
