// Package eventgen generates random but valid event sequences for property
// tests: each mutation is drawn against the current Turn, so references
// (replaced blocks, reorders, compactions) always point at real blocks.
package eventgen

import (
	"fmt"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"pgregory.net/rapid"
)

// Step draws one step (1 to 3 events) valid against turn, applies them to
// turn and returns them. cause and step go into every event's envelope.
func Step(t *rapid.T, turn *projector.Turn, cause string, step int) []events.Event {
	n := rapid.IntRange(1, 3).Draw(t, "events")
	out := make([]events.Event, 0, n)
	for i := 0; i < n; i++ {
		e := events.New(turn.Conversation, cause, step, "eventgen", Payload(t, turn))
		if err := projector.Apply(turn, e); err != nil {
			t.Fatalf("generated an invalid event: %v", err)
		}
		out = append(out, e)
	}
	return out
}

// Payload draws one mutation that is valid against turn.
func Payload(t *rapid.T, turn *projector.Turn) events.Payload {
	id := func() string { return ulid.Make().String() }
	text := rapid.StringMatching(`[a-z ]{0,12}`).Draw(t, "text")
	n := len(turn.Blocks)
	kinds := []string{"user", "llm", "reasoning", "tool", "set", "data", "inference"}
	if n > 0 {
		kinds = append(kinds, "reorder", "remove", "annotate", "split", "compact")
	}
	sp, _, hasPrompt := turn.SystemPrompt()
	if hasPrompt {
		kinds = append(kinds, "replace", "lock")
	}
	pick := func(label string) events.Block { return turn.Blocks[rapid.IntRange(0, n-1).Draw(t, label)] }
	switch rapid.SampledFrom(kinds).Draw(t, "kind") {
	case "user":
		return events.UserAppended{BlockID: id(), Text: text, Meta: meta(t)}
	case "llm":
		return events.LLMTextAppended{BlockID: id(), Text: text}
	case "reasoning":
		return events.ReasoningAppended{BlockID: id(), Text: text}
	case "tool":
		if rapid.Bool().Draw(t, "call") {
			return events.ToolCalled{BlockID: id(), CallID: id(), Name: "lookup", Arguments: `{"q":"` + text + `"}`}
		}
		return events.ToolResult{BlockID: id(), CallID: id(), Text: text}
	case "set":
		return events.SystemPromptSet{BlockID: id(), Text: text, Index: rapid.IntRange(0, n).Draw(t, "index"), Trust: events.Trusted}
	case "replace":
		return events.SystemPromptReplaced{BlockID: sp.ID, Previous: sp.Text, Text: text, Meta: meta(t)}
	case "lock":
		if sp.Meta[events.MetaSystemPromptLock] != "" {
			return events.SystemPromptUnlocked{BlockID: sp.ID}
		}
		return events.SystemPromptLocked{BlockID: sp.ID, Reason: text}
	case "data":
		return events.DataSet{Values: map[string]string{rapid.SampledFrom([]string{"tz", "page", "profile"}).Draw(t, "key"): text + "."}}
	case "inference":
		return events.InferenceStarted{InferenceID: id(), Model: "m", InputHash: projector.Hash(turn), Blocks: n}
	case "reorder":
		perm := rapid.Permutation(turn.Blocks).Draw(t, "perm")
		order := make([]string, len(perm))
		for i, b := range perm {
			order[i] = b.ID
		}
		return events.BlocksReordered{Order: order}
	case "remove":
		return events.BlocksRemoved{BlockIDs: []string{pick("remove").ID}, Reason: "test"}
	case "annotate":
		return events.BlockAnnotated{BlockID: pick("annotate").ID, Meta: map[string]string{"flag": text + "x"}}
	case "split":
		b := pick("split")
		return events.BlockSplit{BlockID: b.ID, Into: []events.Block{
			{ID: id(), Kind: events.KindSystem, Text: "a", Trust: events.Trusted},
			{ID: id(), Kind: events.KindUser, Text: "b"},
		}}
	case "compact":
		k := rapid.IntRange(1, n).Draw(t, "compact")
		removed := make([]string, k)
		for i := 0; i < k; i++ {
			removed[i] = turn.Blocks[i].ID
		}
		var summary *events.Block
		if rapid.Bool().Draw(t, "summary") {
			summary = &events.Block{ID: id(), Kind: events.KindOther, Text: fmt.Sprintf("summary of %d blocks", k)}
		}
		return events.TurnCompacted{Removed: removed, Summary: summary}
	}
	panic("unreachable")
}

func meta(t *rapid.T) map[string]string {
	if !rapid.Bool().Draw(t, "meta") {
		return nil
	}
	return map[string]string{events.MetaSection: rapid.SampledFrom([]string{"conversation", "user_context"}).Draw(t, "section")}
}
