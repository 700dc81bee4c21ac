package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// appendAttempts bounds the reloads after conflicts: concurrent calls of
// one conversation (parallel sub-agents) each win in turn.
const appendAttempts = 20

// parseCacheBytes bounds the items and parameters the recorder remembers
// (calls.ParseCache).
const parseCacheBytes = 64 << 20

// recordTimeout bounds one step's recording.
const recordTimeout = 30 * time.Second

// Recorder records model calls as conversation events: the gateway's
// live calls, the calls import --calls reads from a file and those the
// spool kept while NATS was away all go through it, so they are threaded,
// stored and checked alike.
type Recorder struct {
	log     Log
	threads *calls.Threads
	// local is this gateway's own copy of the threading index (nil for a
	// Recorder of its own: import --calls), asked before threads, kept in
	// localStore.
	local      *calls.Threads
	localStore *calls.MemStore
	check      bool
	checks     *check.Cache
	cache      *turnCache
	logger     *slog.Logger
	metrics    *Metrics
	parse      *calls.ParseCache
	// instance names this gateway process in the calls it records live
	// (calls.Call.Instance; "" for a Recorder of its own), and running
	// holds the IDs of those in flight (see abandoned).
	instance string
	running  sync.Map
}

// NewRecorder returns a Recorder of cfg's log, threading store, checker
// and cache (cfg.Validate's defaults apply; the HTTP settings are unused).
func NewRecorder(cfg Config) (*Recorder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newRecorder(&cfg), nil
}

func newRecorder(cfg *Config) *Recorder {
	return &Recorder{log: cfg.Log, threads: calls.NewThreads(cfg.Threads), check: !cfg.NoCheck, checks: check.NewCache(int(max(cfg.CacheBytes, 0) / checkersShare)),
		cache: newTurnCache(cfg.CacheBytes), logger: cfg.Logger, metrics: cfg.Metrics,
		parse: calls.NewParseCache(parseCacheBytes)}
}

// Forget lets go of what the recorder keeps in memory of conversation
// conv: its Turn, its checker, its entries in this gateway's copy of the
// threading index, and the parse cache (whose items are found by their
// bytes, not by conversation, so all of it goes). It is how an erased
// conversation leaves a running gateway (Gateway.Run follows erasures);
// a call of conv in progress may still put its Turn back, which the log's
// fence then refuses to append to.
func (r *Recorder) Forget(conv string) {
	r.cache.take(conv)
	r.checks.Take(conv)
	if r.localStore != nil {
		r.localStore.ForgetConversation(conv)
	}
	r.parse.Reset()
}

// ConversationIDError is a conversation named by a client or a file that
// cannot be one.
type ConversationIDError struct{ Err error }

func (e *ConversationIDError) Error() string { return e.Err.Error() }
func (e *ConversationIDError) Unwrap() error { return e.Err }

// Pending is a call whose recording began (Begin) and is not finished.
type Pending struct {
	conv      string
	threading string
	parsed    bool
	// named: the client named the conversation (Call.Conversation).
	named    bool
	ready    chan struct{} // closed once conv, threading and parsed are known
	call     *calls.Call
	api      calls.API
	started  time.Time
	input    chan inputResult
	finished bool
	// guess is the state the call was threaded to from this gateway's own
	// copy of the index, without asking the shared one (see thread);
	// nil once verified or when the shared index was asked.
	guess *calls.Ref
	// trace is the context the call's span is a child of (the caller's,
	// from its traceparent); nil for a call recorded later than it was
	// made (import --calls, the spool), which gets no span.
	trace context.Context
	// start, for a deferred call (Call.Deferred), is closed by Start.
	start     chan struct{}
	startOnce sync.Once
	// resumed: the call's input was stored by an import that stopped
	// before its outcome (see resumeImport); the Turn it is finished
	// against is the log's now, which may hold more than its input.
	resumed bool
}

// Start lets a deferred call's recording begin (see Call.Deferred); it
// does nothing after the first time, and for a call not deferred.
func (p *Pending) Start() {
	if p.start != nil {
		p.startOnce.Do(func() { close(p.start) })
	}
}

// Conversation is the call's conversation, known once the call is read
// and threaded (long before the upstream answers).
func (p *Pending) Conversation() string { p.Start(); <-p.ready; return p.conv }

// Threading is how the conversation was found (calls.Thread*).
func (p *Pending) Threading() string { p.Start(); <-p.ready; return p.threading }

// Parsed reports whether the request was of its API's shape (its response
// is then read too).
func (p *Pending) Parsed() bool { p.Start(); <-p.ready; return p.parsed }

// Call is what a call's recording needs to know of it.
type Call struct {
	API calls.API
	// Body is the request body as the client sent it.
	Body []byte
	// Conversation is the conversation the client named ("": thread by
	// content or previous_response_id).
	Conversation string
	// Time stamps its events (zero: now).
	Time time.Time
	// Trace carries the trace context of the caller (tracing.Extract of
	// its request's headers): a live call's span is its child. Nil: no
	// span (a call recorded after the fact).
	Trace context.Context
	// ID is the call's ID (zero: a new ULID); Threading, with
	// Conversation, says how the conversation was found when it was found
	// earlier (the spool), instead of explicit.
	ID, Threading string
	// Import, for a call read from a log of calls (import --calls), is
	// the hash that names it there (calls.Call.Import).
	Import string
	// Deferred holds the recording back until Pending.Start (or anything
	// that needs its result): the gateway starts it once the request is
	// on its way upstream, so that reading and recording the call do not
	// compete with forwarding it for the processor.
	Deferred bool
}

// Begin starts recording a call: in the background, it reads the call,
// finds its conversation and records its input, while the caller forwards
// the call. The only error is a *ConversationIDError, for a named
// conversation that cannot be one.
func (r *Recorder) Begin(ctx context.Context, in Call) (*Pending, error) {
	if in.Conversation != "" {
		if err := events.ValidateConversationID(in.Conversation); err != nil {
			return nil, &ConversationIDError{err}
		}
	}
	c := &calls.Call{ID: in.ID, Time: in.Time, Import: in.Import}
	if c.ID == "" {
		c.ID = ulid.Make().String()
	}
	if in.Time.IsZero() && r.instance != "" {
		// Recorded as it happens: finished by this process, or closed as
		// abandoned by one that knows this one stopped.
		c.Instance = r.instance
		r.running.Store(c.ID, struct{}{})
	}
	p := &Pending{call: c, api: in.API, started: time.Now(), named: in.Conversation != "", ready: make(chan struct{}), input: make(chan inputResult, 1)}
	if in.Deferred {
		p.start = make(chan struct{})
	}
	if in.Trace != nil {
		p.trace = context.WithoutCancel(in.Trace)
	}
	go func() {
		if p.start != nil {
			<-p.start
		}
		ctx := context.WithoutCancel(ctx)
		fork, fresh := r.thread(ctx, p, in)
		// A conversation the gateway found (a guess, see thread; the
		// shared index's; a previous_response_id's) or a fork is known
		// for what it is only once recordInput verified it against the
		// log: it may hold nothing any more (see emptied).
		verify := fork != nil || (!fresh && !p.named)
		if !verify {
			close(p.ready)
		}
		in := r.recordInput(ctx, p, fork, fresh)
		if verify {
			close(p.ready)
		}
		p.input <- in
	}()
	return p, nil
}

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
// after all.
// fromLog says the Turn was loaded.
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
	if err := prepareFork(fork); errors.Is(err, errErasedBefore) {
		return inputResult{erased: true}
	} else if err != nil {
		return inputResult{err: err}
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
		seq, n := turn.Seq, turn.Events
		// Checked while the upstream works, as it is planned, not after
		// it answered: the findings go into the outcome's step.
		fed, found := r.checkerFor(ctx, p, n)
		var closing []events.Event
		if fromLog && !fresh {
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
		if err != nil {
			return inputResult{err: fmt.Errorf("record the call's input: %w", err)}
		}
		turn.Seq = newSeq
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
