package calls

// A call's second step: how it ended, as events after its input.

import (
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Outcome is how a call ended.
type Outcome struct {
	// Output is the response read (nil when there was none to read).
	Output *Output
	// Failure, when set, makes the call failed with this reason (an
	// upstream error status, a cut stream, a client gone); else it
	// finished, unless Output reports an error.
	Failure string
	// Transient says a retry may succeed (5xx, 429, timeouts).
	Transient bool
	// Refused says the upstream answered an error status: it made no
	// response, so a provider that holds the conversation (Request.Continues)
	// did not take the call's items into it.
	Refused  bool
	Duration time.Duration
	// PartialUnstored leaves a failed call's partial output out of its
	// record, which says so: the output was too large to store (the
	// gateway tried, and the log refused the step).
	PartialUnstored bool
}

// PartialUnstoredNote ends the reason of a failed call recorded without its
// partial output (Outcome.PartialUnstored).
const PartialUnstoredNote = "; what the call delivered before it failed is too large to store, and is not recorded"

// PlanOutcome returns the events of a call's second step and applies them
// to turn: the output's blocks and inference.finished, or
// inference.failed with the reason. A failed call's partial output (what
// a stream delivered before its error event or its cut) is kept in
// inference.failed (Partial), not added to the Turn: the client did not
// get an answer to continue from, but an auditor must be able to say what
// the model emitted and the user saw.
// A background response still running (Output.Background) leaves the call
// open, its response noted in the Turn's data (BackgroundKey).
// A compaction (Call.Compact) that answered then compacts away the blocks
// before its output (turn.compacted), the system prompt kept.
// A call the upstream refused that continued a history the provider holds
// (Outcome.Refused, Request.Continues) has the items it added removed
// again (blocks.removed), as the provider keeps none of them.
func PlanOutcome(turn *projector.Turn, c *Call, o Outcome) ([]events.Event, error) {
	conv := turn.Conversation
	var evs []events.Event
	emit := func(p events.Payload) error {
		e := c.event(conv, max(c.outcomeStep, 1), p)
		if err := projector.Apply(turn, e); err != nil {
			return fmt.Errorf("record call %s: %w", c.ID, err)
		}
		if c.Observe != nil {
			c.Observe(e, turn)
		}
		evs = append(evs, e)
		return nil
	}
	if o.Failure == "" && o.Output != nil && o.Output.Background {
		// Queued: the call stays open, noting the response the app
		// fetches later (see PlanBackgroundOutcome).
		return evs, emit(events.DataSet{Values: map[string]string{BackgroundKey(c.ID): o.Output.ResponseID}})
	}
	failure, transient := o.Failure, o.Transient
	if failure == "" && o.Output != nil && o.Output.Error != "" {
		failure, transient = o.Output.Error, o.Output.ErrorTransient
	}
	if failure != "" {
		failed := events.InferenceFailed{InferenceID: c.ID, Error: summary(failure), Transient: transient, Duration: o.Duration, Partial: partial(o.Output)}
		if o.PartialUnstored {
			failed.Error, failed.Partial = failed.Error+PartialUnstoredNote, nil
		}
		if err := emit(failed); err != nil {
			return nil, err
		}
		if o.Refused && c.Request != nil && c.Request.Continues() {
			// The provider's history goes on without this call's items:
			// so does the conversation's, or the next call's items would
			// follow items no model read.
			var gone []string
			for _, id := range c.appended {
				if turn.Index(id) >= 0 {
					gone = append(gone, id)
				}
			}
			if len(gone) > 0 {
				return evs, emit(events.BlocksRemoved{BlockIDs: gone, Reason: "the provider refused the call, so its conversation does not hold the call's new items"})
			}
		}
		return evs, nil
	}
	fin := events.InferenceFinished{InferenceID: c.ID, Duration: o.Duration}
	before := len(turn.Blocks) // the history a compaction's output replaces
	var out []events.Block
	if o.Output != nil {
		out = o.Output.Blocks()
		for _, b := range out {
			if err := emit(appendPayload(ulid.Make().String(), &b, len(turn.Blocks))); err != nil {
				return nil, err
			}
		}
		fin.PromptTokens, fin.CompletionTokens, fin.StopReason = o.Output.PromptTokens, o.Output.CompletionTokens, o.Output.StopReason
		if c.Request != nil && c.Request.API == Responses {
			fin.ResponseID = o.Output.ResponseID
		}
		fin.OtherChoices = o.Output.OtherChoices
		fin.Logprobs, fin.LogprobsOmitted = o.Output.Logprobs, o.Output.LogprobsOmitted
	}
	if err := emit(fin); err != nil {
		return nil, err
	}
	if c.Compact && len(out) > 0 {
		// The provider compacted the history into its output: the app
		// goes on from it, and so does the conversation.
		var old []string
		for _, b := range turn.Blocks[:before] {
			if b.Kind != events.KindSystem {
				old = append(old, b.ID)
			}
		}
		if len(old) > 0 {
			return evs, emit(events.TurnCompacted{Removed: old, Reason: "the provider compacted the history (" + CompactPath + "): the conversation goes on from the call's output"})
		}
	}
	return evs, nil
}

// partial is the output a failed call delivered, as inference.failed
// keeps it: its blocks in order, each with an ID of its own (a block the
// Turn never holds, named so that a view can point at it); nil for none.
func partial(out *Output) []events.Block {
	if out == nil {
		return nil
	}
	var bs []events.Block
	for _, b := range out.Blocks() {
		if b.Text == "" && b.Encrypted == "" && b.ToolName == "" && b.Arguments == "" && b.CallID == "" && len(b.Meta) == 0 {
			continue // a message begun, nothing of it received
		}
		b.ID = ulid.Make().String()
		bs = append(bs, b)
	}
	return bs
}
