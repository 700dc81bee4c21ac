package gateway

// Calls whose outcome this gateway could not record (NATS lost mid-call,
// the log not answering): the response was cut and the log holds the call
// open. The app's retry closes it when it comes back to this gateway (see
// abandoned), but behind a load balancer it often reaches another, which
// finds this gateway running and leaves the call to it; and the retry's
// step is then the conversation's last, so nothing would ever close the
// call. The gateway closes such calls itself, as failed, once its log
// takes appends again.

import (
	"context"
	"errors"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// closeUnclosedEvery is how often a gateway tries again to close the calls
// whose outcome it could not record.
const closeUnclosedEvery = 2 * time.Second

// unclosedFailure is what the closing event says, as abandoned says of
// this gateway's own call when the retry comes back to it.
const unclosedFailure = "no outcome was recorded: this gateway could not record the call's answer (see its error log), and the call is no longer in flight"

// unclosedCall is a call whose outcome was not recorded: its conversation
// and API (for the metric).
type unclosedCall struct {
	conv string
	api  string
}

// noteUnclosed remembers call id of conv, whose outcome Finish could not
// record, for closeUnclosed.
func (r *Recorder) noteUnclosed(id, conv, api string) {
	r.unclosed.Store(id, unclosedCall{conv: conv, api: api})
}

// closeUnclosed closes, every closeUnclosedEvery until ctx ends, the calls
// noteUnclosed remembered, and forgets each once the log holds its
// outcome (this closing, the retry's, or the outcome after all).
func (r *Recorder) closeUnclosed(ctx context.Context) {
	t := time.NewTicker(closeUnclosedEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.unclosed.Range(func(k, v any) bool {
			if r.closeCall(ctx, k.(string), v.(unclosedCall)) {
				r.unclosed.Delete(k)
			}
			return ctx.Err() == nil
		})
	}
}

// closeCall appends inference.failed for call id unless the log already
// holds its outcome, and reports whether the call is closed. The closing
// step takes the place of the call's outcome (<id>:1), so an outcome that
// was stored after all, its append's answer lost, is not closed twice.
func (r *Recorder) closeCall(ctx context.Context, id string, c unclosedCall) bool {
	el, ok := r.log.(eventsLog)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	for range appendAttempts {
		turn, err := r.log.Load(ctx, c.conv)
		if err != nil {
			return false
		}
		var evs []events.Event
		for rec, err := range el.Events(ctx, c.conv) {
			if err != nil {
				return false
			}
			evs = append(evs, rec.Event)
		}
		open := false
		for _, e := range events.OpenCalls(evs) {
			open = open || e.Payload.(events.InferenceStarted).InferenceID == id
		}
		if !open {
			return true // closed, or erased with its conversation
		}
		e := events.New(c.conv, id, 1, calls.Actor, events.InferenceFailed{InferenceID: id, Error: unclosedFailure, Transient: true})
		_, err = r.log.Append(ctx, c.conv, turn.Seq, e)
		switch {
		case errors.Is(err, eventlog.ErrConflict):
			continue
		case errors.Is(err, eventlog.ErrStepExists):
			return true
		case err != nil:
			return false
		}
		r.closedAbandoned(c.conv, c.api, []events.Event{e})
		return true
	}
	return false
}
