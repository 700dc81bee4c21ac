package gateway

import (
	"context"
	"fmt"

	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// The recorder checks each call as it records it (replay --check's
// rules) with a check.Fed per conversation, kept in a check.Cache between
// the conversation's calls. It observes the conversation's events in log
// order as the recorder's plans apply them to the recorder's Turn (no Turn
// of its own, no second fold), at the cost of the call's own events. A
// conversation whose events the gateway did not all see (another gateway
// or a worker wrote some, or its checker was let go, as one is when a
// plan it followed is not stored) has its checker rebuilt from the log.

// checkersShare is the share of Config.CacheBytes the checkers may hold,
// beside the Turns.
const checkersShare = 4

// checker returns conv's checker at the conversation's first atStart
// events, for a call's plan to feed (see observe): the one kept, else one
// rebuilt from the log. The checker observes the Turn the recorder plans
// on rather than folding the events into a Turn of its own.
func (r *Recorder) checker(ctx context.Context, conv string, atStart int) (*check.Fed, error) {
	f := r.checks.Take(conv)
	if f != nil && f.Events == atStart {
		return f, nil
	}
	el, ok := r.log.(eventsLog)
	if !ok {
		return nil, fmt.Errorf("check the call: the log cannot be read")
	}
	return check.RebuildObserving(conv, atStart, eventlog.EventsOnly(el.Events(ctx, conv)))
}

// observe returns what feeds f each event a plan applies (calls.Call's
// Observe) and adds the findings to *found, as finding.recorded payloads
// of call callID. A plan whose events are not stored leaves f fed with
// events the log does not hold: it is then let go, never put back.
func observe(f *check.Fed, callID string, found *[]events.Payload) func(events.Event, *projector.Turn) {
	return func(e events.Event, turn *projector.Turn) {
		for _, x := range f.Observe(e, turn) {
			*found = append(*found, events.FindingRecorded{InferenceID: callID, Rule: string(x.Rule), Detail: x.Detail, Blocks: x.Blocks})
		}
	}
}
