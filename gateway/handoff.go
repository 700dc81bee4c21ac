package gateway

import (
	"context"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// handedOff finds the state a Responses call that sends its whole history
// continues when its instructions are not the ones the state's call sent:
// the OpenAI Agents SDK's Runner, given the whole history, sends each
// agent's instructions with its calls, so the call after a handoff (or the
// next turn, run with another agent) sends the same items with other
// instructions. The Responses API applies instructions to their call
// alone, not to the history, so such a call continues the chat: ok when
// the input's last model output is an item (by the ID its response gave
// it) of a recorded call whose input and output the call's items begin
// with, both without their instructions (calls.ContinuesBesideInstructions),
// and that state is recorded in the call's scope; latest as Threads.Find
// says it. Asked only when the call continues no state by content (a
// first call, with no model output, never matches), so a continuation
// found the common way costs nothing more.
func (r *Recorder) handedOff(ctx context.Context, scope string, blocks []events.Block) (ref calls.Ref, latest, ok bool) {
	if len(blocks) == 0 || blocks[0].Meta[calls.MetaField] != calls.FieldInstructions {
		return calls.Ref{}, false, false
	}
	id := calls.LastOutputItemID(blocks)
	if id == "" {
		return calls.Ref{}, false, false
	}
	refs, err := r.threads.Items(ctx, []string{id})
	at, found := refs[id]
	if err != nil || !found {
		return calls.Ref{}, false, false
	}
	state := r.stateBlocks(ctx, at)
	if !calls.ContinuesBesideInstructions(state, blocks) {
		return calls.Ref{}, false, false
	}
	ref, latest, ok, err = r.threads.Find(ctx, scope, state, nil)
	if err != nil || !ok || ref != at {
		return calls.Ref{}, false, false // another scope's state, or not one the index holds
	}
	return ref, latest, true
}
