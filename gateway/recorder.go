package gateway

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
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
	// unmatchedLogged is when a call whose history matched no recorded
	// call was last logged (UnixNano; see threaded).
	unmatchedLogged atomic.Int64
	metrics         *Metrics
	parse           *calls.ParseCache
	// instance names this gateway process in the calls it records live
	// (calls.Call.Instance; "" for a Recorder of its own), and running
	// holds the IDs of those in flight (see abandoned).
	instance string
	running  sync.Map
	// quarantined holds the conversations found damaged (see
	// stillDamaged).
	quarantined quarantined
	// erased holds, by conversation, when this process heard each
	// conversation erased (Forget), for a while: a call made before
	// belongs to what was erased, whatever the conversation holds when
	// the call is recorded (see erasedAfterMade).
	erased erasedLately
	// unclosed holds the calls whose outcome this gateway could not record,
	// by ID, until they are closed (see closeUnclosed).
	unclosed sync.Map
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
	// When this process heard of it, by its own clock, which is what a
	// call's start is read by (the erasing process's may differ).
	r.erased.note(conv, time.Now())
	r.logger.Debug("gateway: let go of an erased conversation", "conversation", conv)
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
	// named: the client named the conversation (Call.Conversation, or
	// the provider's conversation its request names).
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
	// continues is the state an inferred continuation continues, as the
	// shared index gave it: a conversation found past it when the input
	// is recorded went on since (a sibling call, made at the same
	// moment, recorded first), and the call forks it there instead.
	continues *calls.Ref
	// response is the latest response the call continues by its
	// previous_response_id: a conversation found past it when the input is
	// recorded holds the items of calls that failed after it, which the
	// call may send again (see resentAfterFailed).
	response *calls.Ref
	// resent is the state whose blocks a chained tool loop's step sends
	// again (calls.Call.ResentFrom), as it was threaded: a conversation
	// found gone on past it when the input is recorded is forked there
	// (wentOnSinceResent).
	resent *calls.Ref
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
	// lacks says what of the call its record lacks, and why (see
	// Imported.Lacks); set as it is recorded.
	lacks string
	// inputDone is closed once the input's recording ended, inputErr
	// then set to why it failed (see inputRecorded).
	inputDone chan struct{}
	inputErr  error
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
	// Compact marks a call to the Responses API's compaction
	// (calls.CompactPath; calls.Call.Compact).
	Compact bool
	// Headers are the call's recorded headers (calls.HeadersOf).
	Headers map[string]string
	// Deferred holds the recording back until Pending.Start (or anything
	// that needs its result): the gateway starts it once the request is
	// on its way upstream, so that reading and recording the call do not
	// compete with forwarding it for the processor.
	Deferred bool
	// Unread, when set, is why the call is not read into blocks: it is
	// recorded by the hash of its bytes alone, saying so (a call whose
	// reading would take more memory than the gateway allows).
	Unread string
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
	c := &calls.Call{ID: in.ID, Time: in.Time, Import: in.Import, Compact: in.Compact, Headers: in.Headers}
	if c.ID == "" {
		c.ID = ulid.Make().String()
	}
	if in.Time.IsZero() && r.instance != "" {
		// Recorded as it happens: finished by this process, or closed as
		// abandoned by one that knows this one stopped.
		c.Instance = r.instance
		r.running.Store(c.ID, struct{}{})
	}
	p := &Pending{call: c, api: in.API, started: time.Now(), named: in.Conversation != "", ready: make(chan struct{}), input: make(chan inputResult, 1),
		inputDone: make(chan struct{})}
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
		if in.err == nil && !in.erased {
			r.threaded(p)
		}
		if unfoldable(in.err) {
			r.quarantined.add(p.conv)
		}
		if !in.erased {
			p.inputErr = in.err
		}
		close(p.inputDone)
		if verify {
			close(p.ready)
		}
		p.input <- in
	}()
	return p, nil
}
