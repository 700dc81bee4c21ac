package worker

// This file holds how a request that cannot succeed is ended: as
// request.failed in its conversation, with the user's text kept.

import (
	"context"
	"errors"
	"fmt"
	"github.com/turnlog/turnlog/tracing"
	"slices"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// afterError decides what an error in the middle of a request means.
func (w *Worker) afterError(ctx context.Context, tx *engine.Tx, err error, lastTry bool) (outcome, error) {
	switch {
	case errors.Is(err, errCrash):
		return drop, err
	case ctx.Err() != nil:
		return handBack, err
	case errors.Is(err, eventlog.ErrConflict):
		return retryLater, err
	case errors.Is(err, eventlog.ErrStorageFull):
		// Nothing can be stored, a failure neither: the request waits
		// for space (see holdWhileFull).
		return retryLater, err
	case errors.Is(err, errLogUnavailable):
		// Not a try that failed: the log could not be reached (an
		// election, a worker cut off), and a request.failed could not be
		// stored either. The consumer's MaxDeliver bounds the retries.
		return retryLater, err
	case engine.IsTransient(err) && !lastTry:
		return retryLater, err
	case errors.Is(err, eventlog.ErrCauseReused):
		// Retrying cannot help, and the failure cannot be stored under
		// the request's step ID either: the other conversation holds it.
		// The reason does not name that conversation, which the sender
		// of this request may have no right to know of.
		return w.failAs(ctx, tx, events.RequestFailed{Reason: fmt.Sprintf("request_id %s is already used by another conversation; send every request with a fresh request_id (or none, to have one generated)", tx.Cause())}, true)
	case errors.Is(err, eventlog.ErrTooLarge):
		// The step is refused whole, and a retry would build the same
		// step: fail now, saying what to do. The failure keeps the
		// request's text only where that fits (see failAs).
		return w.fail(ctx, tx, fmt.Sprintf("%v; the step was not stored: send a shorter message, or ask the model for a shorter answer; "+
			"if every request of this conversation fails so, list the compaction middleware in the profile, or start a new conversation (turnlog fork)", err))
	}
	return w.fail(ctx, tx, err.Error())
}

// fail ends the request with request.failed and a reason a person can act
// on. The request is acknowledged: it will not be retried.
func (w *Worker) fail(ctx context.Context, tx *engine.Tx, reason string) (outcome, error) {
	return w.failAs(ctx, tx, events.RequestFailed{Reason: reason}, false)
}

// failAs is fail with the request.failed event f, storing the failure
// under eventlog.ForeignStepID when foreign is set (the request's own step
// IDs belong to another conversation). A failure that says the request was
// taken over by an app leaves no Turn cached: the conversation is the
// app's, and the next request must find that out from the log.
func (w *Worker) failAs(ctx context.Context, tx *engine.Tx, f events.RequestFailed, foreign bool) (outcome, error) {
	reason := f.Reason
	if f.Profile == "" {
		f.Profile = profileOf(ctx)
	}
	// Whatever was pending belongs to the failed attempt and is dropped:
	// the failure is recorded on the Turn as the log has it.
	conv := tx.Turn().Conversation
	w.cache.drop(conv)
	turn, err := w.cfg.Log.Load(ctx, conv)
	readable := err == nil
	if err != nil && unreadable(err) {
		// No Turn to record it on: record it after the log's last
		// message all the same. That Turn stands for nothing and is
		// never cached, or it would hide the bad message.
		var seq uint64
		if seq, err = w.cfg.Log.LastSeq(ctx, conv); err == nil {
			turn = projector.New(conv)
			turn.Seq = seq
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return handBack, err
		}
		return retryLater, err
	}
	// The failure takes the step after the request's last stored one: a
	// step whose append timed out may have been stored all the same, and
	// request.failed under its ID would be dropped as a duplicate.
	step := tx.Step()
	if tail, err := w.cfg.Log.Last(ctx, conv); err == nil && ownStep(tail, tx.Cause()) && tail.Step >= step {
		step = tail.Step + 1
	} else if err == nil && (step == 0 || tail.Cause == tx.Cause()) {
		// A request that failed from a cached Turn before its first
		// step may find that an app has taken the conversation over; one
		// that names an app's call as its own ID owns none of its steps.
		if err := NotAnApps(conv, tail); err != nil {
			return deadLetter, err
		}
	} else if err == nil && appsStep(tail) {
		// The request had stored steps, and an app's call landed after
		// them: whatever the request failed of, its failure follows the
		// app's step, and the conversation stays the app's.
		f.TakenOver = true
	}
	// A request that failed before its first step landed still records
	// what the user asked, so the failure has its context in the log; one
	// that resumed closes the model calls its stopped run left open.
	var inputs []events.Event
	if step == 0 {
		inputs = requestInputs(tx)
	}
	inputs = append(inputs, interruptedCloses(tx)...)
	fresh, err := w.recordFailure(ctx, turn.Clone(), tx.Cause(), step, inputs, f, foreign)
	if len(inputs) > 0 && err != nil && (refused(err) || errors.Is(err, events.ErrInvalid)) && !errors.Is(err, eventlog.ErrConflict) {
		// The inputs themselves cannot be stored (too large, say): the
		// failure alone can.
		fresh, err = w.recordFailure(ctx, turn, tx.Cause(), step, nil, f, foreign)
	}
	if err != nil {
		if ctx.Err() != nil {
			return handBack, err
		}
		return retryLater, err
	}
	w.metrics.requests.WithLabelValues("failed").Inc()
	tracing.Failed(ctx, reason)
	if readable && !f.TakenOver {
		w.cache.put(fresh.Turn(), tx.Cause())
	}
	w.log.Info("request failed", "conversation", conv, "request", tx.Cause(), "reason", reason)
	return ack, nil
}

// recordFailure appends inputs (if any) and request.failed as one step on
// turn.
func (w *Worker) recordFailure(ctx context.Context, turn *projector.Turn, cause string, step int, inputs []events.Event, failed events.RequestFailed, foreign bool) (*engine.Tx, error) {
	fresh := engine.NewTx(turn, cause, engine.WithLog(appender{w: w, foreign: foreign}), engine.WithStep(step))
	for _, e := range inputs {
		if err := fresh.Emit(e.Actor, e.Payload); err != nil {
			return nil, err
		}
	}
	if err := fresh.Emit(ActorWorker, failed); err != nil {
		return nil, err
	}
	return fresh, fresh.Commit(ctx)
}

// interruptedCloses are the inference.failed events closeInterrupted
// emitted on tx and did not store yet: the model calls of an earlier run of
// the request that never answered.
func interruptedCloses(tx *engine.Tx) []events.Event {
	var out []events.Event
	for _, e := range tx.Pending() {
		if e.Actor == ActorWorker && e.Type == events.TypeInferenceFailed {
			out = append(out, e)
		}
	}
	return out
}

// requestInputs are the events the worker recorded from the request itself
// (its user block, its data), committed or not.
func requestInputs(tx *engine.Tx) []events.Event {
	var in []events.Event
	for _, e := range append(slices.Clone(tx.Committed()), tx.Pending()...) {
		if e.Actor == ActorWorker && (e.Type == events.TypeUserAppended || e.Type == events.TypeDataSet) {
			in = append(in, e)
		}
	}
	return in
}
