package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Appender stores one step's events; *eventlog.Log implements it. It is
// defined here, where it is used, so the engine can run against any log
// (or none, in memory, for re-runs and tests).
type Appender interface {
	Append(ctx context.Context, conversation string, expectedSeq uint64, evs ...events.Event) (uint64, error)
}

// ErrSuperseded marks a commit refused because another writer appended to
// the conversation first (a stale expected sequence). It is the normal
// course of optimistic concurrency, not a failure: the caller reloads the
// Turn and runs the request again from what the log holds. An Appender
// wraps its conflict error with it, so that middlewares, which know no log,
// can tell it apart (the logging middleware does not report it as an
// error).
var ErrSuperseded = errors.New("another writer appended first; reloading")

// ErrLogUnavailable marks a commit that got no answer from the log (an
// election, a lost connection): the step may even be stored, and the
// request is retried later from what the log holds. Like ErrSuperseded it
// is recovered from, not a failure of the request.
var ErrLogUnavailable = errors.New("event log unavailable")

// Tx is what middlewares receive: read access to the Turn and the only way
// to change it. Every mutation becomes an event that is applied with the
// projector's Apply (the same fold replay uses) and buffered; Commit
// appends the buffer as one step. What the model sees and what the log
// says therefore cannot differ.
//
// A Tx is used by one request at a time and is not safe for concurrent use.
// After a Commit error its Turn is ahead of the log: reload and start over.
type Tx struct {
	turn  *projector.Turn
	cause string
	step  int
	log   Appender
	delta func(Delta)
	model string
	tools []ToolSpec
	// evs are the events emitted, committed ones first: evs[:committed]
	// are stored, the rest pending. One slice, so a commit moves an index
	// instead of copying the step's events.
	evs       []events.Event
	committed int
	// answerOpen: see WithAnswerOpen.
	answerOpen bool
	// modelCalls counts the inference.started events emitted.
	modelCalls int
	// now is the clock of the events' Time (see WithClock).
	now func() time.Time
	// blocks and data are the Turn's number of blocks and its data as
	// the Tx's events left them (data a copy): a block appended to or cut
	// from Turn().Blocks, or a value written to Turn().Data, is in no
	// event, and projector.ChangedInPlace, which compares the blocks one
	// by one, cannot see it (see unrecorded).
	blocks int
	data   map[string]string
}

// TxOption configures NewTx.
type TxOption func(*Tx)

// WithLog makes Commit append to log; without it a Tx keeps its events in
// memory only (Committed returns them).
func WithLog(log Appender) TxOption { return func(tx *Tx) { tx.log = log } }

// WithStep sets the number of the first step this Tx commits. A request
// resumed after a crash continues after the last step the log holds, so
// every step keeps its <cause>:<step> identity.
func WithStep(step int) TxOption { return func(tx *Tx) { tx.step = step } }

// WithDelta sets where streamed model output goes (e.g. the delta subject).
func WithDelta(fn func(Delta)) TxOption { return func(tx *Tx) { tx.delta = fn } }

// WithModel sets the model the request asks for.
func WithModel(model string) TxOption { return func(tx *Tx) { tx.model = model } }

// WithTools sets the tools offered to the model.
func WithTools(tools ...ToolSpec) TxOption { return func(tx *Tx) { tx.tools = tools } }

// WithAnswerOpen leaves the model's final answer (an output without tool
// calls, with its inference.finished) pending instead of committing it as
// its own step, so that the caller commits it together with what ends the
// request (the worker's request.completed): one append fewer per request.
// Output with tool calls is still committed before any tool runs. A crash
// between the answer and the caller's commit loses the answer, and the
// redelivered request asks the model again; nothing half-done is stored.
func WithAnswerOpen() TxOption { return func(tx *Tx) { tx.answerOpen = true } }

// WithClock sets the clock that stamps the Time of the events the Tx
// emits (default: time.Now, in UTC): for an importer that records a
// history with the times it happened, or a test that wants fixed times.
// Emit reads it once per event; EmitAt sets one event's time.
func WithClock(now func() time.Time) TxOption { return func(tx *Tx) { tx.now = now } }

// NewTx starts a transaction on turn for the request cause. The Tx takes
// ownership of turn: it changes it as events are emitted.
func NewTx(turn *projector.Turn, cause string, opts ...TxOption) *Tx {
	// Room for a request's usual events (its input, a model call and its
	// answer, the worker's end): one allocation instead of a growth per
	// doubling.
	tx := &Tx{turn: turn, cause: cause, evs: make([]events.Event, 0, 8), blocks: len(turn.Blocks), data: maps.Clone(turn.Data)}
	for _, o := range opts {
		o(tx)
	}
	return tx
}

// Turn returns the current Turn, including emitted but uncommitted events.
// It is read-only: change it only through Emit (or the helpers built on
// it). A change made behind the Tx's back would not be in the log: the
// chain refuses to call the model on a Turn whose blocks were changed in
// place (see projector.ChangedInPlace), naming the block.
func (tx *Tx) Turn() *projector.Turn { return tx.turn }

// Cause is the ID of the request this Tx serves.
func (tx *Tx) Cause() string { return tx.cause }

// Step is the number the next Commit will carry.
func (tx *Tx) Step() int { return tx.step }

// Model is the model the request asked for ("" for the provider default).
func (tx *Tx) Model() string { return tx.model }

// SetModel changes the model for the following calls (e.g. a profile's).
func (tx *Tx) SetModel(m string) { tx.model = m }

// Tools are the tools offered to the model.
func (tx *Tx) Tools() []ToolSpec { return tx.tools }

// Delta forwards streamed output to live clients, if any listen.
func (tx *Tx) Delta(d Delta) {
	if tx.delta != nil {
		tx.delta(d)
	}
}

// Emit records a change: it builds the event, applies it to the Turn and
// buffers it for the next Commit. If the fold rejects it, nothing changes
// and the error says why. actor names who made the change.
func (tx *Tx) Emit(actor string, p events.Payload) error {
	e := events.New(tx.turn.Conversation, tx.cause, tx.step, actor, p)
	if tx.now != nil {
		e.Time = tx.now().UTC()
	}
	return tx.emit(actor, e)
}

// EmitAt is Emit with the event's Time set to at (in UTC): for an importer
// recording what happened at another time than now. The log's order is
// still the order of emission, whatever the times say.
func (tx *Tx) EmitAt(actor string, at time.Time, p events.Payload) error {
	e := events.New(tx.turn.Conversation, tx.cause, tx.step, actor, p)
	e.Time = at.UTC()
	return tx.emit(actor, e)
}

func (tx *Tx) emit(actor string, e events.Event) error {
	if actor == "" {
		return fmt.Errorf("%s with no actor: every event names who made the change (a middleware's name)", e.Type)
	}
	// A change behind the Tx's back to what this event builds on is
	// refused here, not only before the model call: the event could be
	// checked against it (a replacement whose Previous is the edited
	// text) and the edit's trace then gone, the step stored not applying
	// to the log.
	if err := tx.unrecordedFor(e.Payload); err != nil {
		return fmt.Errorf("%s: before its %s: %w", actor, e.Type, err)
	}
	if p, ok := e.Payload.(events.SystemPromptReplaced); ok && p.PreviousSource == "" {
		// The source the prompt had, which the writer left out.
		if b, ok := tx.turn.Block(p.BlockID); ok && b.Meta[events.MetaSystemPromptSource] != "" {
			p.PreviousSource = b.Meta[events.MetaSystemPromptSource]
			e.Payload = p
		}
	}
	if p, ok := e.Payload.(events.BlockSplit); ok {
		if err := splitKeepsTrust(tx.turn, p); err != nil {
			return fmt.Errorf("%s: %w", actor, err)
		}
	}
	if err := keepsLock(tx.turn, actor, e.Payload); err != nil {
		return fmt.Errorf("%s: %w", actor, err)
	}
	if err := projector.Apply(tx.turn, e); err != nil {
		return fmt.Errorf("%s: %w", actor, err)
	}
	// What the event made is checked for changes in place before the
	// model call, as the blocks a hash digested are (Infer).
	projector.Note(tx.turn)
	tx.blocks = len(tx.turn.Blocks)
	if !maps.Equal(tx.data, tx.turn.Data) {
		tx.data = maps.Clone(tx.turn.Data)
	}
	tx.evs = append(tx.evs, e)
	if e.Type == events.TypeInferenceStarted {
		tx.modelCalls++
	}
	return nil
}

// unrecorded says how the Turn was changed behind the Tx's back, if it
// was: a block changed in place, blocks added to or cut from
// Turn().Blocks, or its data written to. Such a change is in no event, so
// the log would not hold what a model is sent next, and the events that
// follow are checked against a Turn the log does not hold.
func (tx *Tx) unrecorded() error {
	if i, changed := projector.ChangedInPlace(tx.turn); changed {
		return changedInPlace(tx.turn, i)
	}
	return tx.resized()
}

// unrecordedFor is unrecorded for what event p builds on, at the cost of
// one block, not the whole Turn (it runs at every event): the Turn's
// blocks and data as the Tx's events left them, and the block p changes
// in place, whose digest the fold then forgets.
func (tx *Tx) unrecordedFor(p events.Payload) error {
	if err := tx.resized(); err != nil {
		return err
	}
	var id string
	switch p := p.(type) {
	case events.SystemPromptReplaced:
		id = p.BlockID
	case events.BlockAnnotated:
		id = p.BlockID
	case events.BlockSplit:
		id = p.BlockID
	case events.SystemPromptLocked:
		id = p.BlockID
	case events.SystemPromptUnlocked:
		id = p.BlockID
	default:
		return nil
	}
	if i, changed := projector.ChangedInPlaceID(tx.turn, id); changed {
		return changedInPlace(tx.turn, i)
	}
	return nil
}

// changedInPlace is the error for block i of turn, changed in place.
func changedInPlace(turn *projector.Turn, i int) error {
	return fmt.Errorf("block %d (%s) was changed in place, not through an event (Tx.Emit): the log would not hold what the model is sent; "+
		"a middleware changes the Turn only through the Tx (Tx.Emit), whose events the log records", i, turn.Blocks[i].ID)
}

// resized says how the Turn's blocks were added to or cut from, or its
// data written to, behind the Tx's back, if they were.
func (tx *Tx) resized() error {
	turn := tx.turn
	if n := len(turn.Blocks); n != tx.blocks {
		return fmt.Errorf("the Turn has %d blocks, its events made %d: blocks were added to or cut from Turn().Blocks, not through an event (Tx.Emit): the log would not hold what the model is sent; "+
			"a middleware changes the Turn only through the Tx (Tx.Emit), whose events the log records", n, tx.blocks)
	}
	if !maps.Equal(turn.Data, tx.data) {
		return errors.New("the Turn's data was written to (Turn().Data), not through an event (data.set through Tx.Emit): the log would not hold what the model is sent; " +
			"a middleware changes the Turn only through the Tx (Tx.Emit), whose events the log records")
	}
	return nil
}

// ErrTrustRaised refuses a block.split that would make trusted text, or a
// system prompt, of a block that is not trusted: instructions come only
// from trusted text, and a split must not launder a user's or a file's
// text into them. A system prompt is set with systemprompt.set.
var ErrTrustRaised = errors.New("a split cannot raise trust")

// splitKeepsTrust checks that p makes nothing trusted, and no system
// prompt, of a block that is not trusted. The fold itself takes such a
// split (a log that holds one still reads); the Tx, the way every change
// is written, refuses to write one.
func splitKeepsTrust(turn *projector.Turn, p events.BlockSplit) error {
	src, ok := turn.Block(p.BlockID)
	if !ok || src.Trust == events.Trusted {
		return nil // the fold says what is wrong with a missing block
	}
	for _, b := range p.Into {
		if b.Trust == events.Trusted || b.Kind == events.KindSystem {
			return fmt.Errorf("%w: block %s (%s) is not trusted, and the split makes %s block %s of it; set a system prompt with systemprompt.set", ErrTrustRaised, src.ID, src.Kind, describeTrust(b), b.ID)
		}
	}
	return nil
}

func describeTrust(b events.Block) string {
	if b.Trust == events.Trusted {
		return "trusted " + string(b.Kind)
	}
	return string(b.Kind)
}

// ModelCalls is how many model calls this Tx has recorded (its
// inference.started events, the summariser's included): the count that
// request.completed carries, so that a program that ends its requests
// itself need not count them.
func (tx *Tx) ModelCalls() int { return tx.modelCalls }

// Pending returns the events emitted since the last Commit. The slice is
// the Tx's own: read it, do not change it.
func (tx *Tx) Pending() []events.Event { return tx.evs[tx.committed:len(tx.evs):len(tx.evs)] }

// Committed returns every event this Tx has committed, in order. The
// slice is the Tx's own: read it, do not change it.
func (tx *Tx) Committed() []events.Event { return tx.evs[:tx.committed:tx.committed] }

// Commit appends the pending events as one step, atomically, expecting the
// log to be where the Turn says (optimistic concurrency). With nothing
// pending it does nothing and does not use up a step number.
func (tx *Tx) Commit(ctx context.Context) error {
	pending := tx.Pending()
	if len(pending) == 0 {
		return nil
	}
	if tx.log != nil {
		seq, err := tx.log.Append(ctx, tx.turn.Conversation, tx.turn.Seq, pending...)
		if err != nil {
			return fmt.Errorf("commit step %d: %w", tx.step, err)
		}
		tx.turn.Seq = seq
	}
	tx.committed = len(tx.evs)
	tx.step++
	return nil
}

// NewID returns a fresh block ID.
func NewID() string { return ulid.Make().String() }
