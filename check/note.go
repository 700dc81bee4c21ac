package check

// What each event the Checker is fed means for the rules that compare a
// call's input with the ones before it.

import (
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// note records what an event (already applied) means for the rules across
// calls.
func (c *Checker) note(e events.Event, n int, turn *projector.Turn) {
	operator := strings.HasPrefix(e.Actor, operatorPrefix)
	output := func(id string) {
		b, ok := turn.Block(id)
		if !ok {
			return
		}
		if prev := c.lastOutput; prev != "" {
			if pb, ok := turn.Block(prev); ok && pb.Kind == events.KindReasoning && c.follower[prev] == "" &&
				(b.Kind == events.KindLLMText || b.Kind == events.KindToolCall || b.Kind == events.KindReasoning) {
				c.follower[prev] = id
			}
		}
		c.lastOutput = id
		c.since.outputs = append(c.since.outputs, id)
		c.since.markCallInput(id, e)
		c.since.content[id] = contentOf(&b)
	}
	switch p := e.Payload.(type) {
	case events.UserAppended, events.LLMTextAppended, events.ReasoningAppended, events.ToolCalled, events.ToolResult,
		events.InferenceStarted, events.InferenceFinished, events.InferenceFailed, events.RequestCompleted, events.RequestFailed,
		events.DataSet, events.BlockAnnotated, events.SystemPromptLocked, events.SystemPromptUnlocked, events.MessageRemoved,
		events.FindingRecorded:
		// They append a block at the end, or change nothing a model reads.
	case events.SystemPromptSet:
		c.since.changed = c.since.changed || p.Index != len(turn.Blocks)-1
	default:
		c.since.changed = true
	}
	switch p := e.Payload.(type) {
	case events.ConversationStarted:
		for i := range p.Blocks {
			if b := &p.Blocks[i]; b.Kind == events.KindReasoning {
				c.produced[b.ID] = contentOf(b)
				c.noteSigned(b.ID, b.Text, b.Encrypted)
				if i+1 < len(p.Blocks) && (p.Blocks[i+1].Kind == events.KindLLMText || p.Blocks[i+1].Kind == events.KindToolCall ||
					p.Blocks[i+1].Kind == events.KindReasoning) {
					c.follower[b.ID] = p.Blocks[i+1].ID
				}
			}
		}
	case events.BlockInserted:
		c.inserted[p.Block.ID] = true
		if c.copiesModelText(turn, &p.Block) {
			c.copied[p.Block.ID] = true
		}
	case events.SystemPromptSet:
		c.origin[p.BlockID] = e.Actor
		c.since.operator = c.since.operator || operator
		c.promptFree = c.promptFree || operator
	case events.SystemPromptReplaced:
		c.since.operator = c.since.operator || operator || e.Actor == actorGlobalPrompt
		c.promptFree = c.promptFree || operator || e.Actor == actorGlobalPrompt
	case events.ReasoningAppended:
		if _, ok := c.produced[p.BlockID]; !ok {
			c.produced[p.BlockID] = content{kind: events.KindReasoning, text: p.Text, encrypted: p.Encrypted}
			c.producedBy[p.BlockID] = c.calls
		}
		c.noteSigned(p.BlockID, p.Text, p.Encrypted)
		output(p.BlockID)
	case events.LLMTextAppended:
		output(p.BlockID)
	case events.ToolCalled:
		output(p.BlockID)
	case events.ToolResult:
		output(p.BlockID)
	case events.InferenceFinished:
		c.since.noteChoices(p)
	case events.UserAppended:
		c.lastOutput = ""
	case events.BlocksReordered:
		if e.Actor == actorOrdering {
			c.since.ordered = true
		} else if e.Actor != calls.Actor {
			c.since.movedBy = append(c.since.movedBy, culprit(e, n))
		}
	case events.BlocksRemoved:
		for _, id := range p.BlockIDs {
			if operator || e.Actor == actorReasoningGuard {
				c.since.removed[id] = e.Actor
			} else if e.Actor != calls.Actor {
				c.since.removedBy[id] = culprit(e, n)
			} else if _, ok := c.produced[id]; ok {
				c.since.leftOut = append(c.since.leftOut, leftOut{id: id, by: callStep(e)})
			}
		}
		c.since.operator = c.since.operator || operator
		c.promptFree = c.promptFree || operator
	case events.TurnCompacted:
		c.since.compacted = true
		c.promptFree = true
		for _, id := range p.Removed {
			c.since.removed[id] = "compaction"
		}
	}
}

// culprit names event e, at position n, as a history_rewritten
// finding blames it: its type, its actor and its position, e.g.
// `blocks.reordered of "acme.compact" (event 13)`. The gateway's events
// are never blamed: they record what an app's call sent, so the app, not
// the gateway, left the history out.
func culprit(e events.Event, n int) string {
	return string(e.Type) + " of " + strconv.Quote(e.Actor) + " (event " + itoa(n) + ")"
}

// copiesModelText reports whether b, a block a middleware inserted into
// turn, is a model text the Turn already held as the model's own: a copy
// of what the model said, wherever it was put.
func (c *Checker) copiesModelText(turn *projector.Turn, b *events.Block) bool {
	if b.Kind != events.KindLLMText {
		return false
	}
	want := contentOf(b)
	for i := range turn.Blocks {
		o := &turn.Blocks[i]
		if o.ID != b.ID && o.Kind == events.KindLLMText && !c.inserted[o.ID] && contentOf(o) == want {
			return true
		}
	}
	return false
}
