package gateway

// A call's outcome: recorded after its input, acknowledged by JetStream
// before the response's last byte, indexed for threading beside it.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/tracing"
)

// Finish records a call's outcome after its input, and returns once
// JetStream acknowledged it. o.Duration is recorded as it is: zero says
// the call's latency is unknown (a logged call without one), never the
// time its recording took. It runs once per call; later calls return
// nil.
func (r *Recorder) Finish(ctx context.Context, p *Pending, o calls.Outcome) (err error) {
	if p.finished {
		return nil
	}
	p.finished = true
	defer r.running.Delete(p.call.ID)
	p.Start()
	in := <-p.input
	if in.erased {
		return nil // said by emptied; the app keeps its answer
	}
	if in.err != nil {
		r.metrics.calls.WithLabelValues(string(p.api), "unrecorded").Inc()
		r.logger.Error("gateway: call not recorded", "conversation", p.conv, "err", in.err)
		return in.err
	}
	defer func() {
		if err != nil && p.call.Instance != "" { // a live call, its input stored, its outcome not
			r.noteUnclosed(p.call.ID, p.conv, string(p.api))
		}
	}()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	span := r.startSpan(p, in)
	turn := in.turn
	// The checker follows the outcome's plan, as it followed the input's;
	// a plan that is not stored lets it go (see observe).
	findings, checker := in.findings, in.checker
	ok := o.Failure == "" && (o.Output == nil || o.Output.Error == "")
	// A background response's ID is continued by the app's next call
	// (previous_response_id) as any other's, though its output is not here.
	background := o.Failure == "" && o.Output != nil && o.Output.Background
	// Indexed for previous_response_id and item references: the
	// Responses API's alone.
	answer := calls.AnswerOf(p.api, o.Output)
	var indexed func(context.Context) error
	inputSeq := turn.Seq // the input's step, or the log's end it was finished against
	unstored := false    // the answer was too large to store: recorded as failed
	choicesCut := false  // some of its other choices were left out, too large to store
	for attempt := 0; ; attempt++ {
		var none []events.Payload // an outcome's events find nothing
		if checker != nil {
			p.call.Observe = observe(checker, p.call.ID, &none)
		}
		evs, err := calls.PlanOutcome(turn, p.call, o)
		if err != nil {
			return err
		}
		for _, f := range findings {
			e := events.New(p.conv, p.call.ID, 1, calls.Actor, f)
			if !p.call.Time.IsZero() {
				e.Time = p.call.Time.UTC()
			}
			if err := projector.Apply(turn, e); err != nil {
				return fmt.Errorf("record a finding: %w", err)
			}
			if p.call.Observe != nil {
				p.call.Observe(e, turn)
			}
			evs = append(evs, e)
		}
		p.call.Observe = nil
		if (ok || background) && indexed == nil {
			// Indexed for threading beside the append, not after it: the
			// client's next call may come as soon as the answer ends. The
			// entries are published first, and their acknowledgement
			// awaited after the append's, which it overlaps. Should the
			// append fail, the entry names a state the log lacks, and a
			// call continuing it starts a conversation (see recordInput).
			var err error
			if indexed, err = r.threads.RecordAsync(ctx, p.conv, turn.Events, p.call.Scope(), turn.Blocks, stateChain(p.call, o, turn, p.resumed), answer); err != nil {
				indexed = func(context.Context) error { return err }
			}
		}
		seq, err := r.log.Append(ctx, p.conv, turn.Seq, evs...)
		if errors.Is(err, eventlog.ErrConflict) && attempt < appendAttempts {
			r.metrics.conflicts.Inc()
			checker = nil
			if indexed != nil { // only a call with an output is indexed
				if err := indexed(ctx); err != nil {
					r.logger.Warn("gateway: call not indexed for threading", "conversation", p.conv, "err", err)
				}
			}
			indexed = nil
			if r.erasedUnder(ctx, p, inputSeq) {
				span.End(tracing.CallResult{Err: errErasedUnder, ErrorType: "erased"})
				return nil
			}
			if turn, err = r.log.Load(ctx, p.conv); err != nil {
				return err
			}
			continue
		}
		if trimmed, fits := trimOtherChoices(o, err); fits && ok && !unstored {
			// Too large by the choices after the first: the call is
			// recorded with its first, which the conversation goes on
			// with, the others past the bound left out with their size.
			// Planned again, and indexed again (its blocks are new).
			r.logger.Warn("gateway: call's other choices too large to store; recorded with some left out", "conversation", p.conv, "err", err)
			if !choicesCut { // once a call, cut again or not
				choicesCut = true
				r.metrics.unstored.WithLabelValues("other_choices").Inc()
			}
			o = trimmed
			r.unindex(ctx, p, indexed, turn.Events, in.atStart)
			indexed, checker = nil, nil
			if turn, err = r.log.Load(ctx, p.conv); err != nil {
				return err
			}
			continue
		}
		if errors.Is(err, eventlog.ErrTooLarge) && !unstored {
			// The answer cannot be one message; the app gets it all the
			// same (this is not NATS away), and the log the call failed,
			// saying why. Planned again on the Turn as the log has it.
			unstored = true
			r.metrics.unstored.WithLabelValues("output").Inc()
			r.unindex(ctx, p, indexed, turn.Events, in.atStart)
			indexed, checker = nil, nil
			if !ok && !background {
				// A failed call whose partial output is too large: it
				// stays failed for its own reason, recorded without it.
				r.logger.Warn("gateway: failed call's partial output too large to store; recorded without it", "conversation", p.conv, "err", err)
				o.PartialUnstored = true
				p.lacks = "without what it delivered before it failed: too large to store"
			} else {
				r.logger.Warn("gateway: call's answer too large to store; recorded as failed", "conversation", p.conv, "err", err)
				o = calls.Outcome{Failure: "the answer is too large to store: larger than one NATS message (raise the server's max_payload); it reached the client but is not recorded", Duration: o.Duration}
				p.lacks = "without its answer, as failed: " + o.Failure
			}
			ok, background, answer = false, false, calls.Answer{}
			if turn, err = r.log.Load(ctx, p.conv); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			r.unindex(ctx, p, indexed, turn.Events, in.atStart)
			r.metrics.calls.WithLabelValues(string(p.api), "unrecorded").Inc()
			r.logger.Error("gateway: call's outcome not recorded", "conversation", p.conv, "err", err)
			err = fmt.Errorf("record the call's outcome: %w", err)
			span.End(tracing.CallResult{Err: err, ErrorType: "unrecorded"})
			return err
		}
		turn.Seq = seq
		break
	}
	if span.Recording() {
		span.End(spanResult(o))
	} else {
		span.End(tracing.CallResult{})
	}
	if checker != nil {
		r.checks.Put(checker)
	}
	r.metrics.countFindings(findings)
	outcome := "finished"
	switch {
	case background:
		outcome = "background"
	case !ok:
		outcome = "failed"
	}
	r.metrics.calls.WithLabelValues(string(p.api), outcome).Inc()
	if indexed != nil {
		if err := indexed(ctx); err != nil {
			// The call is recorded; only a later call's threading by
			// content can miss it (it then starts a conversation).
			r.logger.Warn("gateway: call not indexed for threading", "conversation", p.conv, "err", err)
		}
	} else if ok {
		// Planned again after a conflict: indexed at its final position.
		if err := r.threads.Record(ctx, p.conv, turn.Events, p.call.Scope(), turn.Blocks, nil, answer); err != nil {
			r.logger.Warn("gateway: call not indexed for threading", "conversation", p.conv, "err", err)
		}
	}
	if !ok && !background && p.threading == calls.ThreadNew && p.call.Request != nil && !p.call.Request.Continues() {
		// The conversation's first call failed: the app's retry of it
		// continues this conversation (see calls.FindRetried).
		if err := r.threads.RecordFailedFirst(ctx, p.conv, turn.Events, p.call.Scope(), turn.Blocks); err != nil {
			r.logger.Warn("gateway: failed call not indexed for its retry", "conversation", p.conv, "err", err)
		}
	}
	r.snapshot(ctx, turn, in.atStart, eventlog.StepID(p.call.ID, 1))
	r.cache.put(turn)
	return nil
}

// unindex undoes the threading index's entry of a call whose outcome was
// not stored at position at (indexed, the entry's acknowledgement, nil
// when none was published): the index said this call was the
// conversation's latest, and the next call (a retry) must find the state
// before it, atStart, latest again.
func (r *Recorder) unindex(ctx context.Context, p *Pending, indexed func(context.Context) error, at, atStart int) {
	if indexed == nil || indexed(ctx) != nil {
		return
	}
	if err := r.threads.Unrecord(ctx, p.conv, at, atStart); err != nil {
		r.logger.Warn("gateway: threading index still names the unrecorded call as its conversation's latest", "conversation", p.conv, "err", err)
	}
}

// snapshot saves the conversation's snapshot when the call took it past a
// multiple of the log's snapshot interval: the gateway serves a
// conversation from its cache and rarely loads it, so a restarted gateway
// (or another one) would otherwise fold its whole history.
func (r *Recorder) snapshot(ctx context.Context, turn *projector.Turn, atStart int, lastMsgID string) {
	every := r.log.SnapshotEvery()
	if every <= 0 || turn.Events/every == atStart/every {
		return
	}
	if err := r.log.SaveSnapshot(ctx, turn, lastMsgID); err != nil {
		r.logger.Warn("gateway: snapshot not saved", "conversation", turn.Conversation, "err", err)
	}
}

// errErasedUnder is a call's span's error when its conversation was
// erased while the call was in flight.
var errErasedUnder = errors.New("the conversation was erased while the call was in flight; its outcome is not recorded")

// erasedUnder reports whether p's conversation was erased after the call's
// input was stored at inputSeq: the log no longer holds that step (see
// eventlog.Log.Holds). Writing the outcome then would bring back, as a
// conversation of its own, what the erasure removed; so nothing is
// written, the call is counted as erased and logged, and the app keeps
// the answer the provider gave. An error asking is taken as not erased:
// the call is planned again against the log, as after any refused append.
func (r *Recorder) erasedUnder(ctx context.Context, p *Pending, inputSeq uint64) bool {
	if inputSeq == 0 {
		return false
	}
	held, err := r.log.Holds(ctx, p.conv, inputSeq)
	if err != nil || held {
		return false
	}
	r.metrics.calls.WithLabelValues(string(p.api), "erased").Inc()
	r.logger.Warn("gateway: call's conversation was erased while the call was in flight; its outcome is not recorded (the app got its answer)",
		"conversation", p.conv, "call", p.call.ID)
	return true
}

// errErasedBefore stops the recording of a call whose conversation was
// erased after the call was made, before its input was stored.
var errErasedBefore = errors.New("the conversation was erased after the call was made; the call is not recorded")

// emptied reports whether conversation conv, which the call was threaded
// to (its own, or the one it forks) and which the log now finds empty,
// was erased after the call was made: the call then belongs to what was
// erased (it re-sends the erased history, or continues it), and recording
// it would bring that back, under the erased ID or as a conversation of
// its own. Nothing of it is recorded; it is counted as erased and logged,
// and the app keeps the answer the provider gives. Erase notes its time
// before it purges the events (calls.Threads.ErasedAt), so a call that
// finds the conversation empty finds the note too; the call's time is
// this gateway's clock, the note's the erasing process's. An error asking
// is taken as not erased (logged): the call is recorded as after an
// erasure.
func (r *Recorder) emptied(ctx context.Context, p *Pending, conv string) bool {
	if heard, ok := r.erased.since(conv); ok {
		// Heard by this process, by its own clock (the call's start
		// is read by it, the note's by the erasing process's).
		if !p.started.Before(heard) {
			return false
		}
		r.erasedBeforeRecorded(p, conv, heard)
		return true
	}
	at, ok, err := r.threads.ErasedAt(ctx, conv)
	if err != nil {
		r.logger.Warn("gateway: could not read whether the call's conversation was erased; it is recorded", "conversation", conv, "err", err)
		return false
	}
	if !ok || !p.started.Before(at) {
		return false
	}
	r.erasedBeforeRecorded(p, conv, at)
	return true
}

// erasedBeforeRecorded counts and logs a call not recorded because its
// conversation conv was erased at at, after the call was made.
func (r *Recorder) erasedBeforeRecorded(p *Pending, conv string, at time.Time) {
	r.metrics.calls.WithLabelValues(string(p.api), "erased").Inc()
	r.logger.Warn("gateway: call's conversation was erased after the call was made; the call is not recorded (the app gets its answer)",
		"conversation", conv, "call", p.call.ID, "erased_at", at)
}

// trimOtherChoices returns o with the other choices of its answer
// (Output.OtherChoices) cut by as much as err, an append's
// *eventlog.TooLargeError, says the step is too large (calls.
// TrimOtherChoices); false when err is not that, or when leaving them
// all out does not make the step fit.
func trimOtherChoices(o calls.Outcome, err error) (calls.Outcome, bool) {
	var tl *eventlog.TooLargeError
	if !errors.As(err, &tl) || o.Output == nil || o.Output.OtherChoices == "" {
		return o, false
	}
	// A few bytes more: the encoded string's length prefix may shrink
	// by less than the string does.
	kept, ok := calls.TrimOtherChoices(o.Output.OtherChoices, tl.Size-tl.Max+16)
	if !ok {
		return o, false
	}
	out := *o.Output
	out.OtherChoices = kept
	o.Output = &out
	return o, true
}
