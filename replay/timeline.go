package replay

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

// ErrNoEvents is returned for a conversation without events: there is
// nothing to replay (check the ID, or whether it was erased).
var ErrNoEvents = errors.New("conversation has no events")

// Option configures Timeline, Verify, Rerun and At.
type Option func(*options)

type options struct {
	progress func(events int)
	turns    func(inference int) bool
	// quarantine, when set, is given each message that is not a step of
	// the conversation, and read goes on past it; without it such a
	// message ends the read with its *eventlog.CorruptMessageError.
	quarantine func(*eventlog.CorruptMessageError) error
	// foreign, when set, is given each message turnlog did not write,
	// which the source names (ForeignSource); without it they are
	// passed over unseen.
	foreign func(*eventlog.ForeignMessageError) error
	// wire, when set, renders recorded wire requests again (WithWire).
	wire WireRenderer
	// profiles and profileName: Rerun re-runs each request with the
	// profile that served it (WithRequestProfiles).
	profiles    profile.Set
	profileName string
}

// WithProgress calls fn with the number of events read so far, every 256
// events and once at the end, so a command can show progress on long
// conversations. fn runs on the caller's goroutine.
func WithProgress(fn func(events int)) Option { return func(o *options) { o.progress = fn } }

// WithTurns selects which inferences (numbered from 1) of a History carry
// their whole input Turn; the default is all. A Turn is a deep copy, so a
// long conversation without compaction costs memory in proportion to
// inferences times blocks; `replay --inference N` keeps one.
func WithTurns(keep func(inference int) bool) Option { return func(o *options) { o.turns = keep } }

func collect(opts []Option) options {
	o := options{progress: func(int) {}, turns: func(int) bool { return true }}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// History is a conversation event by event, as `turnlog replay` shows
// it. Its JSON form is the stable output of `turnlog replay -o json`.
type History struct {
	Conversation string `json:"conversation"`
	// Events lists every event in log order.
	Events []Entry `json:"events"`
	// Inferences counts the model calls (inference.started events).
	Inferences int `json:"inferences"`
}

// Entry is one event of a History.
type Entry struct {
	// N is the event's position in the conversation, counting from 1: the
	// n of <conversation>@<n>.
	N int `json:"n"`
	// Seq is the stream sequence of the message (step) that holds it.
	Seq   uint64      `json:"seq"`
	Time  time.Time   `json:"time"`
	Type  events.Type `json:"type"`
	Actor string      `json:"actor"`
	// Writer is the role whose credential stored the event's step
	// ("admin", "worker"), as the server let it publish to the role's
	// own subject: the actor is what the writer claims, the writer is
	// proved (see Verify). "" for a step stored before roles were
	// recorded (unattributed).
	Writer string `json:"writer"`
	// Cause is the request the event belongs to and Step its step in it.
	Cause string `json:"cause"`
	Step  int    `json:"step"`
	// Summary says in one line what the event did.
	Summary string `json:"summary"`
	// Payload is the event's payload as the catalog defines it.
	Payload events.Payload `json:"payload"`
	// Inference is set on inference.started events: what the model
	// received.
	Inference *Inference `json:"inference,omitempty"`
	// Quarantined is set, with Type "quarantined" and N 0, for a message
	// on the conversation's subject that is not one of its steps (bytes
	// that do not decode, another conversation's events): it is shown,
	// and skipped by the fold, until `turnlog repair` removes it.
	Quarantined *Quarantined `json:"quarantined,omitempty"`
	// Foreign is set, with Type "foreign" and N 0, for a message on the
	// conversation's subjects that turnlog did not write (a NATS reply
	// or another client's publish, see eventlog.ErrForeignMessage): it is
	// shown, and ignored by every read, until `turnlog repair` removes
	// it.
	Foreign *Foreign `json:"foreign,omitempty"`
}

// Inference is one model call as the log proves it: the Turn re-projected
// from the events before it, and the system prompt that was active.
type Inference struct {
	// Index numbers the conversation's model calls from 1 (replay
	// --inference N); N is the position of its inference.started event.
	Index       int    `json:"index"`
	N           int    `json:"n"`
	InferenceID string `json:"inference_id"`
	Model       string `json:"model"`
	Purpose     string `json:"purpose,omitempty"`
	// InputHash is the hash inference.started recorded; Verified is true
	// when the re-projected input proves it as replay --verify checks it
	// (the Turn's hash; for a gateway call, its request rendered again as
	// canonical JSON), false also for a hash format this build does not
	// know.
	InputHash string `json:"input_hash"`
	Verified  bool   `json:"verified"`
	// Gateway is what the recording gateway recorded of the call it
	// forwarded for an app (api, params, wire_sha256: the SHA-256 of the
	// bytes the app sent, threading, ...; events.InferenceStarted), nil
	// for a call an engine made.
	Gateway map[string]string `json:"gateway,omitempty"`
	// SystemPrompt is the active system prompt, null when there was none.
	SystemPrompt *ActivePrompt `json:"system_prompt"`
	// Turn is the exact input, block by block; omitted for inferences
	// WithTurns did not select.
	Turn *projector.Turn `json:"turn,omitempty"`
	// WireSHA256, WireVersion and WireParams are the request the call
	// sent, as the event that closed it recorded them (events.Wire):
	// WireSHA256 is "" when none was recorded (the call failed before
	// sending, never closed, or was recorded before wire hashes were).
	WireSHA256  string `json:"wire_sha256"`
	WireVersion string `json:"wire_version,omitempty"`
	WireParams  string `json:"wire_params,omitempty"`
	// WireNotes say what became of the blocks the request does not show
	// plainly (not sent, merged, moved to a field of their own), when a
	// caller with the engines rendered the request again (`turnlog replay
	// --inference N`; see engine.BlockNote).
	WireNotes []engine.BlockNote `json:"wire_notes,omitempty"`
	// Findings are the rules this input broke (see Check), omitted when
	// none: what the console marks the model call with.
	Findings []check.Finding `json:"findings,omitempty"`
}

// Wire is the request the call recorded, empty when none.
func (in *Inference) Wire() events.Wire {
	return events.Wire{SHA256: in.WireSHA256, Version: in.WireVersion, Params: in.WireParams}
}

// read folds a conversation's events, calling visit before each event is
// applied (with the walker as it stood after the previous event) and
// after (applied true). It returns the walker and the number of events.
// A fold error stops it.
func read(ctx context.Context, src Source, conversation string, o options, visit func(w *walker, r *eventlog.Record) error) (*walker, int, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return nil, 0, err
	}
	w := newWalker(conversation)
	n := 0
	for r, err := range eventsOf(ctx, src, conversation, o.foreign != nil) {
		var alien *eventlog.ForeignMessageError
		if errors.As(err, &alien) {
			if o.foreign != nil {
				if err := o.foreign(alien); err != nil {
					return w, n, err
				}
			}
			continue
		}
		var bad *eventlog.CorruptMessageError
		if o.quarantine != nil && errors.As(err, &bad) {
			if err := o.quarantine(bad); err != nil {
				return w, n, err
			}
			continue
		}
		if err != nil {
			return w, n, err
		}
		if err := visit(w, &r); err != nil {
			return w, n, err
		}
		n++
		if n%256 == 0 {
			o.progress(n)
		}
	}
	o.progress(n)
	if n == 0 {
		return w, 0, fmt.Errorf("%s: %w", conversation, ErrNoEvents)
	}
	return w, n, nil
}

// Timeline replays a conversation: every event with a one-line summary,
// and at each inference.started the Turn the model received (re-projected
// from the log up to that event) with its active system prompt. It never
// reads snapshots. It keeps a copy of every selected Turn (see WithTurns);
// Entries shows a long conversation keeping one model call at a time.
func Timeline(ctx context.Context, src Source, conversation string, opts ...Option) (*History, error) {
	tl := &History{Conversation: conversation, Events: []Entry{}}
	for e, err := range Entries(ctx, src, conversation, opts...) {
		if err != nil {
			return nil, err
		}
		if e.Inference != nil {
			tl.Inferences++ // its Turn is a copy already (see Entries)
		}
		tl.Events = append(tl.Events, *e)
	}
	return tl, nil
}

// Entries yields a conversation's timeline entry by entry while it reads
// the log: what `turnlog replay` streams. It keeps the entries of one
// model call at most: an inference.started entry, and those after it, are
// held back until the event that closes the call (inference.finished or
// inference.failed), which records the request the call sent, so that
// the call's entry carries it (Inference.WireSHA256); a call that never
// closed is yielded at the next call or at the end. An entry's
// Inference.Turn is a copy of the re-projection, not to be changed.
// Iteration stops at the first error, which is yielded.
func Entries(ctx context.Context, src Source, conversation string, opts ...Option) iter.Seq2[*Entry, error] {
	return func(yield func(*Entry, error) bool) {
		o := collect(opts)
		inferences := 0
		stopped := false
		chk := NewChecker()
		var (
			held []*Entry
			open = map[string]*Inference{} // held calls not closed yet
		)
		emit := func(e *Entry) error {
			if len(held) > 0 {
				held = append(held, e)
				return nil
			}
			if !yield(e, nil) {
				stopped = true
				return errStop
			}
			return nil
		}
		flush := func() error {
			for _, e := range held {
				if !yield(e, nil) {
					stopped = true
					return errStop
				}
			}
			held = held[:0]
			clear(open)
			return nil
		}
		o.quarantine = func(bad *eventlog.CorruptMessageError) error {
			q := &Quarantined{Seq: bad.Seq, Size: bad.Size, Reason: bad.Err.Error()}
			e := &Entry{Seq: bad.Seq, Time: bad.Time, Type: TypeQuarantined, Quarantined: q,
				Summary: fmt.Sprintf("quarantined message %d (%d bytes), not a step of this conversation: %s; `turnlog repair --yes %s` removes it",
					bad.Seq, bad.Size, quote(q.Reason), events.CommandArg(conversation))}
			return emit(e)
		}
		o.foreign = func(alien *eventlog.ForeignMessageError) error { return emit(ForeignEntry(alien)) }
		_, _, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
			e := &Entry{N: r.Pos, Seq: r.Seq, Time: r.Time, Type: r.Type, Actor: r.Actor, Writer: r.Writer, Cause: r.Cause, Step: r.Step,
				Summary: Summary(r.Event), Payload: r.Payload}
			if p, ok := r.Payload.(events.InferenceStarted); ok {
				inferences++
				inf := &Inference{Index: inferences, N: r.Pos, InferenceID: p.InferenceID, Model: p.Model, Purpose: p.Purpose,
					InputHash: p.InputHash, Gateway: p.Gateway}
				input, prompt := w.turn, w.active()
				switch {
				case p.Gateway != nil:
					// A gateway call's input: the Turn, the blocks it
					// names (previous_response_id), or nil for a request
					// the gateway could not read.
					input = callInput(w, p, r.Pos)
					if input != nil && len(p.InputBlocks) > 0 {
						// A call continuing a history the provider
						// holds: its prompt is its own (calls.ActivePrompt).
						prompt = nil
						if sp, ok := calls.ActivePrompt(w.turn, input.Blocks, true); ok {
							prompt = w.describe(sp, w.turn.Index(sp.ID))
						}
					}
				case isAside(p):
					// A call on an input built from part of the Turn: the
					// rebuilt input is what it received (nil: the log does
					// not hold it, and it is not verified).
					input, prompt, _ = asideInput(w.turn, p, r.Pos)
				}
				inf.SystemPrompt = prompt
				// The Turn before an inference.started is the Turn after it.
				inf.Findings = chk.Observe(r.Event, r.Pos, w.turn)
				inf.Verified = inputVerified(w.turn, input, p)
				if input != nil {
					if o.turns(inferences) {
						// A copy: the entry is held while the fold goes on.
						inf.Turn = input.Clone()
					}
				}
				e.Inference = inf
				// The previous call, if it never closed, is let go.
				if err := flush(); err != nil {
					return err
				}
				held = append(held, e)
				open[p.InferenceID] = inf
				return w.apply(r)
			}
			if err := emit(e); err != nil {
				return err
			}
			id, wire, _ := closedCall(r.Payload)
			if inf, ok := open[id]; ok && id != "" {
				inf.WireSHA256, inf.WireVersion, inf.WireParams = wire.SHA256, wire.Version, wire.Params
				delete(open, id)
				if len(open) == 0 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if err := w.apply(r); err != nil {
				return err
			}
			chk.Observe(r.Event, r.Pos, w.turn)
			return nil
		})
		if !stopped && flush() != nil {
			return
		}
		if err != nil && !stopped {
			yield(nil, fmt.Errorf("replay %s: %w", conversation, err))
		}
	}
}

// Point is a conversation as it stood after its n-th event: what
// <conversation>@<n> names, with the system prompt active there.
type Point struct {
	Conversation string `json:"conversation"`
	// At is n; Events is how many events the conversation has in all.
	At     int `json:"at"`
	Events int `json:"events"`
	// Turn is the Turn after event n, re-projected from the log.
	Turn *projector.Turn `json:"turn"`
	// SystemPrompt is the active system prompt, null when there is none.
	SystemPrompt *ActivePrompt `json:"system_prompt"`
}

// At re-projects a conversation up to its n-th event (counting from 1; 0
// is the empty Turn before the first event) without reading snapshots.
func At(ctx context.Context, src Source, conversation string, n int, opts ...Option) (*Point, error) {
	if n < 0 {
		return nil, fmt.Errorf("replay %s@%d: positions count from 1 (0 is the empty Turn)", conversation, n)
	}
	o := collect(opts)
	var pt *Point
	w, total, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		if r.Pos > n {
			if pt == nil {
				pt = &Point{Conversation: conversation, At: n, Turn: w.turn.Clone(), SystemPrompt: w.active()}
			}
			return nil // keep counting
		}
		return w.apply(r)
	})
	if err != nil {
		return nil, fmt.Errorf("replay %s@%d: %w", conversation, n, err)
	}
	if n > total {
		return nil, fmt.Errorf("replay %s@%d: %w: the conversation has %d events; use an n from 0 to %d",
			conversation, n, eventlog.ErrNotFound, total, total)
	}
	if pt == nil {
		pt = &Point{Conversation: conversation, At: n, Turn: w.turn, SystemPrompt: w.active()}
	}
	pt.Events = total
	return pt, nil
}
