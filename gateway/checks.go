package gateway

import (
	"context"
	"fmt"

	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// The recorder checks each call as it records it (replay --check's
// rules) with a check.Fed per conversation, kept in a check.Cache between
// the conversation's calls and fed the conversation's events in log
// order, at the cost of the call's own events. A conversation whose
// events the gateway did not all see (another gateway or a worker wrote
// some, or its checker was let go) has its checker rebuilt from the log.

// checkersShare is the share of Config.CacheBytes the checkers may hold,
// beside the Turns: each holds its conversation's Turn too.
const checkersShare = 4

// checkInput feeds a call's input step (evs, after the conversation's
// first atStart events) to the conversation's checker and returns the
// findings of the call, as finding.recorded payloads. The checker is
// handed back with the findings for fedOutcome.
func (r *Recorder) checkInput(ctx context.Context, conv, callID string, atStart int, evs []events.Event) (*check.Fed, []events.Payload, error) {
	f := r.checks.Take(conv)
	if f == nil || f.Events != atStart {
		el, ok := r.log.(eventsLog)
		if !ok {
			return nil, nil, fmt.Errorf("check the call: the log cannot be read")
		}
		var err error
		if f, err = check.Rebuild(conv, atStart, eventlog.EventsOnly(el.Events(ctx, conv))); err != nil {
			return nil, nil, err
		}
	}
	var out []events.Payload
	for _, e := range evs {
		fs, err := f.Feed(e)
		if err != nil {
			return nil, nil, fmt.Errorf("check the call: %w", err)
		}
		for _, x := range fs {
			out = append(out, events.FindingRecorded{InferenceID: callID, Rule: string(x.Rule), Detail: x.Detail, Blocks: x.Blocks})
		}
	}
	return f, out, nil
}

// fedOutcome feeds the call's outcome step to its checker and keeps it,
// when the step followed the input at once (no other call's events in
// between: those would be unknown to it).
func (r *Recorder) fedOutcome(f *check.Fed, evs []events.Event, adjacent bool) {
	if f == nil || !adjacent {
		return
	}
	for _, e := range evs {
		if _, err := f.Feed(e); err != nil {
			return
		}
	}
	r.checks.Put(f)
}
