package replay

import (
	"context"
	"fmt"
	"iter"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Source is where replay reads a conversation's events; *eventlog.Log
// implements it. Everything replay reports is re-projected from these
// events, never taken from a snapshot.
type Source interface {
	Events(ctx context.Context, conversation string) iter.Seq2[eventlog.Record, error]
}

// ForeignSource is a Source that also names, in log order, the messages on
// a conversation's subjects that turnlog did not write (a NATS reply a
// client had the server publish there, another client's publish: see
// eventlog.ErrForeignMessage), each as a *eventlog.ForeignMessageError;
// *eventlog.Log implements it. The timeline and Describe report them when
// their source does; from a plain Source they are never seen.
type ForeignSource interface {
	Source
	EventsWithForeign(ctx context.Context, conversation string) iter.Seq2[eventlog.Record, error]
}

// eventsOf reads the conversation from src, with its foreign messages
// when src names them and foreign is set.
func eventsOf(ctx context.Context, src Source, conversation string, foreign bool) iter.Seq2[eventlog.Record, error] {
	if fs, ok := src.(ForeignSource); ok && foreign {
		return fs.EventsWithForeign(ctx, conversation)
	}
	return src.Events(ctx, conversation)
}

// ActivePrompt is the system prompt a model call received (the Turn's
// first system block, see projector.Turn.SystemPrompt) and its history as
// the log tells it. Its JSON form is part of `turnlog replay -o json`.
type ActivePrompt struct {
	// ID and Index locate the block in the Turn.
	ID    string `json:"id"`
	Index int    `json:"index"`
	// Text is the prompt as the model received it; Hash is
	// projector.HashText(Text), which inference.started records.
	Text string `json:"text"`
	Hash string `json:"hash"`
	// Source is the block's systemprompt.source metadata: which middleware
	// or template wrote it ("" when none says).
	Source string       `json:"source,omitempty"`
	Trust  events.Trust `json:"trust,omitempty"`
	// Locked is true when the block carries systemprompt.lock metadata,
	// which middlewares honour by leaving it alone; LockedAt is the n of
	// the event that locked it (0 when unknown or not locked) and LockedBy
	// the lock's value: the actor of the systemprompt.locked, e.g.
	// "operator:ada".
	Locked   bool   `json:"locked"`
	LockedAt int    `json:"locked_at,omitempty"`
	LockedBy string `json:"locked_by,omitempty"`
	// TemplateHash and Variables are those of the template the latest
	// systemprompt.set or systemprompt.replaced of this block was rendered
	// from, when it recorded them.
	TemplateHash string            `json:"template_hash,omitempty"`
	Variables    map[string]string `json:"variables,omitempty"`
	// Untrusted are the byte ranges of Text that variables filled in
	// (events.Block.Untrusted): everything else is the operator's text.
	Untrusted []events.Span `json:"untrusted,omitempty"`
	// SetAt is the n of the event that created the block and SetBy its
	// type (systemprompt.set, conversation.started for forks and imports,
	// block.split, turn.compacted); 0 and "" when the log does not say.
	SetAt int         `json:"set_at"`
	SetBy events.Type `json:"set_by,omitempty"`
	// SetActor is the actor of that event: a middleware, "import",
	// "fork", or "operator:<name>" for `turnlog prompt set`.
	SetActor string `json:"set_actor,omitempty"`
	// ReplacedAt is the n of the last event that changed its text
	// (systemprompt.replaced or a block.split that kept its ID), 0 when
	// it was never replaced; Replacements counts those events.
	ReplacedAt   int `json:"replaced_at,omitempty"`
	Replacements int `json:"replacements"`
	// ReplacedBy is the actor of the last replacement.
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// history is what the log says about one system block.
type history struct {
	setAt        int
	setBy        events.Type
	setActor     string
	replacedAt   int
	replacedBy   string
	replacements int
	lockedAt     int
	templateHash string
	vars         map[string]string
}

// walker folds a conversation event by event, keeping the history of its
// system blocks so that the active prompt at any point can say where it
// came from. One pass over the log serves the timeline, verification and
// re-runs: nothing is folded twice.
type walker struct {
	turn    *projector.Turn
	prompts map[string]*history
}

func newWalker(conversation string) *walker {
	return &walker{turn: projector.New(conversation), prompts: map[string]*history{}}
}

// apply folds one recorded event into the Turn and the prompt histories.
// The error names the event's position and sequence.
func (w *walker) apply(r *eventlog.Record) error {
	if err := projector.Apply(w.turn, r.Event); err != nil {
		return fmt.Errorf("event %d (seq %d): %w", r.Pos, r.Seq, &eventlog.UnappliableError{Conversation: w.turn.Conversation, Seq: r.Seq, Err: err})
	}
	w.turn.Seq = r.Seq
	w.track(r.Pos, r.Actor, r.Payload)
	return nil
}

func (w *walker) track(n int, actor string, p events.Payload) {
	created := func(b events.Block, by events.Type) {
		if b.Kind != events.KindSystem {
			return
		}
		h := &history{setAt: n, setBy: by, setActor: actor}
		if b.Meta[events.MetaSystemPromptLock] != "" {
			h.lockedAt = n
		}
		w.prompts[b.ID] = h
	}
	switch p := p.(type) {
	case events.SystemPromptSet:
		h := &history{setAt: n, setBy: events.TypeSystemPromptSet, setActor: actor, templateHash: p.TemplateHash, vars: p.Variables}
		if p.Meta[events.MetaSystemPromptLock] != "" {
			h.lockedAt = n
		}
		w.prompts[p.BlockID] = h
	case events.SystemPromptReplaced:
		h := w.history(p.BlockID)
		h.replacedAt, h.replacedBy = n, actor
		h.replacements++
		h.templateHash, h.vars = p.TemplateHash, p.Variables
		w.lock(h, n, p.Meta)
	case events.BlockAnnotated:
		if h, ok := w.prompts[p.BlockID]; ok {
			w.lock(h, n, p.Meta)
		}
	case events.SystemPromptLocked:
		w.history(p.BlockID).lockedAt = n
	case events.SystemPromptUnlocked:
		w.history(p.BlockID).lockedAt = 0
	case events.ConversationStarted:
		for _, b := range p.Blocks {
			created(b, events.TypeConversationStarted)
		}
	case events.BlockSplit:
		for _, b := range p.Into {
			if h, ok := w.prompts[b.ID]; ok && b.ID == p.BlockID && b.Kind == events.KindSystem {
				// The part that kept the block's ID is the same prompt,
				// with a new text.
				h.replacedAt, h.replacedBy = n, actor
				h.replacements++
				continue
			}
			created(b, events.TypeBlockSplit)
		}
	case events.TurnCompacted:
		if p.Summary != nil {
			created(*p.Summary, events.TypeTurnCompacted)
		}
	}
}

// history returns the history of a system block, creating an empty one for
// a block the log never said the origin of.
func (w *walker) history(id string) *history {
	h, ok := w.prompts[id]
	if !ok {
		h = &history{}
		w.prompts[id] = h
	}
	return h
}

func (w *walker) lock(h *history, n int, change map[string]string) {
	if v, ok := change[events.MetaSystemPromptLock]; ok {
		if v == "" {
			h.lockedAt = 0
		} else {
			h.lockedAt = n
		}
	}
}

// active describes the Turn's active system prompt, or nil when it has
// none.
func (w *walker) active() *ActivePrompt {
	sp, i, ok := w.turn.SystemPrompt()
	if !ok {
		return nil
	}
	return w.describe(sp, i)
}

// describe describes system block sp, at index i of the Turn, as a
// call's prompt.
func (w *walker) describe(sp events.Block, i int) *ActivePrompt {
	a := &ActivePrompt{
		ID:        sp.ID,
		Index:     i,
		Text:      sp.Text,
		Hash:      projector.HashText(sp.Text),
		Source:    sp.Meta[events.MetaSystemPromptSource],
		Trust:     sp.Trust,
		Locked:    sp.Meta[events.MetaSystemPromptLock] != "",
		LockedBy:  sp.Meta[events.MetaSystemPromptLock],
		Untrusted: sp.Untrusted,
	}
	if h, ok := w.prompts[sp.ID]; ok {
		a.SetAt, a.SetBy, a.SetActor = h.setAt, h.setBy, h.setActor
		a.ReplacedAt, a.Replacements, a.ReplacedBy = h.replacedAt, h.replacements, h.replacedBy
		a.TemplateHash, a.Variables = h.templateHash, h.vars
		if a.Locked {
			a.LockedAt = h.lockedAt
		}
	}
	return a
}
