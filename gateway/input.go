package gateway

// A call's first step: its input planned against its conversation's Turn
// (or a fork's), checked, and appended with inference.started while the
// upstream works.

import (
	"context"
	"errors"
	"fmt"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

type inputResult struct {
	turn    *projector.Turn
	evs     []events.Event
	atStart int // the Turn's events before the call
	started int // the n of the call's inference.started
	// checker and findings are the conversation's checker fed the input,
	// and what it found (nil when checks are off or failed).
	checker  *check.Fed
	findings []events.Payload
	// erased: nothing was recorded, the call's conversation was erased
	// after the call was made (see emptied).
	erased bool
	err    error
}

// turn returns conv's Turn: the cached one, trusted without asking the
// log, else a load. A cached Turn the log has left behind (another
// gateway, a worker or a concurrent call appended since) is refused by
// the append's expected-sequence fence, and the call then loads the
// conversation and plans again: staleness costs a conflict, never a wrong
// record, and the common case costs no round trip. A conversation the
// gateway just named (fresh) has no events: its first append's fence
// (expected sequence 0) refuses the empty Turn should the log hold any
// after all. fromLog says the Turn was loaded.
func (r *Recorder) turn(ctx context.Context, conv string, fresh bool) (_ *projector.Turn, fromLog bool, _ error) {
	if fresh {
		return projector.New(conv), false, nil
	}
	if t := r.cache.take(conv); t != nil {
		r.metrics.loads.WithLabelValues("cache").Inc()
		return t, false, nil
	}
	r.metrics.loads.WithLabelValues("log").Inc()
	t, err := r.log.Load(ctx, conv)
	return t, true, err
}

// recordInput records a call's first step: its input against the
// conversation's Turn (or a fork's), then inference.started. On a
// conflict (another call of the conversation appended first) it reloads
// and plans again.
func (r *Recorder) recordInput(ctx context.Context, p *Pending, fork *calls.Ref, fresh bool) inputResult {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	req := p.call.Request // kept to thread again should the guess fail
	prepareFork := func(fork *calls.Ref) error {
		if fork == nil {
			return nil
		}
		from, err := r.log.LoadAt(ctx, fork.Conversation, fork.Events)
		if errors.Is(err, eventlog.ErrNotFound) {
			// The index names a state the log does not hold (its
			// conversation was erased, or that call's outcome was never
			// stored): there is nothing to fork, and the call starts a
			// conversation of its own, unless the erasure came after the
			// call was made (see emptied).
			if r.emptied(ctx, p, fork.Conversation) {
				return errErasedBefore
			}
			r.logger.Warn("gateway: the threading index names a state the log does not hold; the call starts a conversation",
				"state", fmt.Sprintf("%s@%d", fork.Conversation, fork.Events))
			p.call.Fork, p.call.Threading, p.threading = nil, calls.ThreadNew, calls.ThreadNew
			return nil
		}
		if err != nil {
			return fmt.Errorf("load %s@%d to fork it: %w", fork.Conversation, fork.Events, err)
		}
		blocks := make([]events.Block, len(from.Blocks))
		for i, b := range from.Blocks {
			blocks[i] = b.Clone()
		}
		p.call.Fork = &calls.Fork{From: fork.Conversation, At: fork.Events, Blocks: blocks, Data: from.Data}
		return nil
	}
	if err := prepareFork(fork); err != nil {
		return inputResult{err: err, erased: errors.Is(err, errErasedBefore)}
	}
	rethread := func() error {
		fork, fresh = r.unguess(ctx, p, req)
		return prepareFork(fork)
	}
	loaded := "" // the conversation whose Turn this call loaded and cached
	for attempt := 0; ; attempt++ {
		turn, fromLog, err := r.turn(ctx, p.conv, fresh && attempt == 0)
		if err != nil {
			return inputResult{err: err}
		}
		fromLog = fromLog || p.conv == loaded // cached just below, not changed since
		if turn.Events == 0 && !fresh {
			if r.emptied(ctx, p, p.conv) {
				return inputResult{erased: true}
			}
			if !p.named && p.call.Fork == nil {
				// Found by the gateway, the conversation holds nothing
				// (erased before the call, its index entries not yet):
				// the call starts one of its own, not one by that ID.
				r.logger.Warn("gateway: the threading index names a conversation the log does not hold; the call starts a conversation", "conversation", p.conv)
				p.guess, p.conv, p.call.Threading, p.threading = nil, ulid.Make().String(), calls.ThreadNew, calls.ThreadNew
				turn, fresh = projector.New(p.conv), true
			}
		}
		if p.guess != nil && turn.Events != p.guess.Events {
			// The conversation went on past the guessed state: only the
			// shared index knows whether that state is still its latest
			// call's.
			r.cache.put(turn)
			if fromLog {
				loaded = turn.Conversation
			}
			if err := rethread(); err != nil {
				return inputResult{err: err, erased: errors.Is(err, errErasedBefore)}
			}
			continue
		}
		if c := p.continues; c != nil && p.guess == nil && turn.Events > c.Events && turn.Conversation == c.Conversation &&
			!holdsTurn(p.call.Request, turn) && r.wentOn(ctx, p.conv, c) {
			// The conversation went on past the state the call continues
			// (a call made at the same moment, recorded first): the call
			// forks it there, as a call made after that one would.
			r.cache.put(turn)
			p.continues, p.conv, fresh = nil, ulid.Make().String(), true
			if err := prepareFork(c); err != nil {
				return inputResult{err: err, erased: errors.Is(err, errErasedBefore)}
			}
			continue
		}
		if rs := p.resent; wentOnSinceResent(p, turn) {
			// A chained step whose conversation went on since it was
			// threaded: it forks it at the state it sends again.
			r.cache.put(turn)
			p.resent, p.conv, fresh = nil, ulid.Make().String(), true
			if err := prepareFork(rs); err != nil {
				return inputResult{err: err, erased: errors.Is(err, errErasedBefore)}
			}
			continue
		}
		if r.erasedAfterMade(p) {
			r.cache.put(turn)
			return inputResult{erased: true}
		}
		r.resentAfterFailed(ctx, p, turn)
		seq, n := turn.Seq, turn.Events
		// Checked while the upstream works, as it is planned, not after
		// it answered: the findings go into the outcome's step.
		fed, found := r.checkerFor(ctx, p, n)
		var closing []events.Event
		if fromLog && !fresh && p.call.Instance != "" {
			// A live call (one recorded later, from the spool or a file,
			// is stamped with its own time, and closes nothing).
			for _, pl := range r.abandoned(ctx, p.conv) {
				e := events.New(p.conv, p.call.ID, 0, calls.Actor, pl)
				if err := projector.Apply(turn, e); err != nil {
					return inputResult{err: fmt.Errorf("close an abandoned call: %w", err)}
				}
				if p.call.Observe != nil {
					p.call.Observe(e, turn)
				}
				closing = append(closing, e)
			}
		}
		evs, err := calls.PlanInput(turn, p.call)
		evs = append(closing, evs...)
		p.call.Observe = nil
		if err != nil && p.call.Request != nil {
			// The call cannot be recorded as parsed (the gateway's own
			// rendering would not prove it): record it unparsed, with
			// why. The Turn was changed by the plan: load it again.
			r.logger.Warn("gateway: call recorded as unparsed", "conversation", p.conv, "err", err)
			p.call.Request, p.call.Unparsed = nil, err.Error()
			continue
		}
		if err != nil {
			return inputResult{err: err}
		}
		if p.call.Import != "" {
			// Where an import that stops from here on left the call
			// (see recordLogged).
			if err := r.threads.ImportPending(ctx, p.call.Import, p.conv); err != nil {
				return inputResult{err: err}
			}
		}
		newSeq, err := r.log.Append(ctx, p.conv, seq, evs...)
		if errors.Is(err, eventlog.ErrConflict) && attempt < appendAttempts {
			// Loaded again from the log: a guessed conversation that moved
			// on is threaded again with the shared index, one emptied is
			// found so (see above).
			r.metrics.conflicts.Inc()
			continue
		}
		if errors.Is(err, eventlog.ErrTooLarge) && p.call.Request != nil {
			// The call's new content cannot be one message: the call is
			// on its way upstream already (its plan is made as it is
			// forwarded), and the app must get its answer. It is recorded
			// as unparsed, by the hash of its bytes and why; the Turn was
			// changed by the plan, and is loaded again.
			r.metrics.unstored.WithLabelValues("input").Inc()
			r.logger.Warn("gateway: call's new content too large to store; recorded by its hash alone", "conversation", p.conv, "err", err)
			p.call.Request, p.call.Unparsed = nil, "its new content is too large to store: larger than one NATS message (raise the server's max_payload, or have the app send large attachments by URL or file ID); recorded by the hash of its bytes alone"
			p.lacks = "by its hash alone: " + p.call.Unparsed
			continue
		}
		if err != nil {
			return inputResult{err: fmt.Errorf("record the call's input: %w", err)}
		}
		turn.Seq = newSeq
		r.closedAbandoned(p.conv, string(p.api), closing)
		p.guess = nil // verified: the log ended at the guessed state
		return inputResult{turn: turn, evs: evs, atStart: n, started: turn.Events, checker: fed, findings: *found}
	}
}

// checkerFor sets the call's Observe to feed the conversation's checker
// at its first atStart events as the call is planned, when the recorder
// checks calls, and returns the checker and where its findings go. A
// checker that cannot be had leaves the call unchecked (logged): it is
// recorded all the same, and replay --check and ls check it again from
// the log.
func (r *Recorder) checkerFor(ctx context.Context, p *Pending, atStart int) (*check.Fed, *[]events.Payload) {
	found := new([]events.Payload)
	if !r.check {
		return nil, found
	}
	fed, err := r.checker(ctx, p.conv, atStart)
	if err != nil {
		r.logger.Warn("gateway: call not checked", "conversation", p.conv, "err", err)
		return nil, found
	}
	p.call.Observe = observe(fed, p.call.ID, found)
	return fed, found
}
