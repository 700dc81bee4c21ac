// Package operator is what an operator does by hand to one conversation,
// outside any chat request: set, lock and unlock its system prompt. `turnlog
// prompt` and the HTTP routes under /conversations/{id}/prompt call it.
//
// Every action is recorded as events like any other change: actor
// "operator:<name>", cause "operator-<ULID>", appended with the
// conversation's last sequence as the expected one, so an action never
// overwrites a worker's step it did not see (it is retried on the new
// state instead), and `turnlog replay` shows who did what.
package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// Errors an action returns for a state it cannot act on; callers branch
// on them (the HTTP API answers 409).
var (
	// ErrLocked: the prompt is locked, and setting it would break the lock.
	ErrLocked = errors.New("the conversation's system prompt is locked")
	// ErrNoPrompt: there is no prompt to lock or unlock.
	ErrNoPrompt = errors.New("the conversation has no system prompt")
)

// ErrInvalid is wrapped by errors about the caller's input (an empty
// prompt, a bad operator name): the HTTP API answers 400.
var ErrInvalid = errors.New("invalid operator action")

// MaxPromptBytes bounds a prompt an operator sets: it is sent with every
// model call of the conversation. It is the bound of a global template.
const MaxPromptBytes = 256 << 10

// ActorPrefix starts the actor of every operator event.
const ActorPrefix = "operator:"

// Actor returns the actor of an operator's events, "operator:<name>". The
// name says who acted (a user name, "http"); it is checked so that it
// reads plainly in a timeline: 1 to 64 letters, digits, '.', '_', '-', '@'.
func Actor(name string) (string, error) {
	if name == "" || len(name) > 64 {
		return "", fmt.Errorf("%w: operator name %q: use 1 to 64 characters", ErrInvalid, name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-@", c)) {
			return "", fmt.Errorf("%w: operator name %q: use letters, digits, '.', '_', '-' or '@'", ErrInvalid, name)
		}
	}
	return ActorPrefix + name, nil
}

// Store is what the actions need of a log; *eventlog.Log implements it.
type Store interface {
	Load(ctx context.Context, conversation string) (*projector.Turn, error)
	Append(ctx context.Context, conversation string, expectedSeq uint64, evs ...events.Event) (uint64, error)
}

// Result says what an action did.
type Result struct {
	Conversation string `json:"conversation"`
	// Changed is false when the conversation already was as asked (the
	// same prompt set by an operator, a lock already held, no lock to
	// lift): nothing was recorded.
	Changed bool `json:"changed"`
	// BlockID is the prompt's block.
	BlockID string `json:"block_id,omitempty"`
	// Events are the types recorded, in order; At is the position (n) of
	// the last one.
	Events []events.Type `json:"events"`
	At     int           `json:"at,omitempty"`
	// Note says, for an unchanged conversation, why nothing was done.
	Note string `json:"note,omitempty"`
}

// SetOptions are the optional parts of SetPrompt.
type SetOptions struct {
	// Lock locks the prompt in the same step.
	Lock bool
	// Reason is recorded in the events.
	Reason string
}

// SetPrompt makes text the conversation's system prompt, with source
// "operator": the conversation's prompt (see middlewares.ConversationPrompt)
// gets the text in place (systemprompt.replaced, recording the previous
// text and source), or, when there is none, a trusted prompt is inserted
// at the front (systemprompt.set; a conversation without events is
// started that way). With Lock, systemprompt.locked follows in the same
// step. A locked prompt is refused with ErrLocked: unlock it first.
//
// Under a profile with prompt_policy: replace, the profile takes an
// unlocked operator prompt over at its next model call; lock it to keep it.
func SetPrompt(ctx context.Context, store Store, conversation, text, actor string, opts SetOptions) (*Result, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%w: the prompt is empty; give its text", ErrInvalid)
	}
	if len(text) > MaxPromptBytes {
		return nil, fmt.Errorf("%w: the prompt is %d bytes; the limit is %d", ErrInvalid, len(text), MaxPromptBytes)
	}
	return act(ctx, store, conversation, actor, func(turn *projector.Turn) ([]events.Payload, string, string, error) {
		reason := opts.Reason
		if reason == "" {
			reason = "set by an operator"
		}
		sp, _, ok := middlewares.ConversationPrompt(turn)
		var out []events.Payload
		switch {
		case ok && sp.Meta[events.MetaSystemPromptLock] != "":
			return nil, sp.ID, "", fmt.Errorf("%w (by %s); unlock it first (turnlog prompt unlock %s)", ErrLocked, sp.Meta[events.MetaSystemPromptLock], events.CommandArg(conversation))
		case !ok:
			sp = events.Block{ID: ulid.Make().String()}
			out = append(out, events.SystemPromptSet{BlockID: sp.ID, Text: text, Index: 0, Trust: events.Trusted,
				Meta: map[string]string{events.MetaSystemPromptSource: middlewares.SourceOperator}})
		case sp.Text != text || sp.Meta[events.MetaSystemPromptSource] != middlewares.SourceOperator:
			out = append(out, events.SystemPromptReplaced{BlockID: sp.ID, Text: text, Previous: sp.Text,
				Meta: middlewares.TakeOverMeta(sp.Meta, middlewares.SourceOperator, nil), Reason: reason,
				PreviousSource: sp.Meta[events.MetaSystemPromptSource]})
		}
		if opts.Lock {
			out = append(out, events.SystemPromptLocked{BlockID: sp.ID, Reason: opts.Reason})
		}
		if len(out) == 0 {
			return nil, sp.ID, "the prompt already is this text, set by an operator", nil
		}
		return out, sp.ID, "", nil
	})
}

// LockPrompt locks the conversation's prompt (systemprompt.locked): from
// the next model call on, no middleware replaces, appends to, rebuilds or
// splits it, nor adds a system block beside it, until UnlockPrompt. A
// prompt locked already is left as it is (Changed false). A conversation
// without a prompt gets ErrNoPrompt.
func LockPrompt(ctx context.Context, store Store, conversation, actor, reason string) (*Result, error) {
	return act(ctx, store, conversation, actor, func(turn *projector.Turn) ([]events.Payload, string, string, error) {
		sp, _, ok := middlewares.ConversationPrompt(turn)
		if !ok {
			return nil, "", "", fmt.Errorf("%w to lock; set one first (turnlog prompt set --text TEXT %s)", ErrNoPrompt, events.CommandArg(conversation))
		}
		if by := sp.Meta[events.MetaSystemPromptLock]; by != "" {
			return nil, sp.ID, "already locked by " + by, nil
		}
		return []events.Payload{events.SystemPromptLocked{BlockID: sp.ID, Reason: reason}}, sp.ID, "", nil
	})
}

// UnlockPrompt lifts the lock of the conversation's prompt
// (systemprompt.unlocked): the profile's middlewares manage it again from
// the next model call. A prompt that is not locked is left as it is
// (Changed false).
func UnlockPrompt(ctx context.Context, store Store, conversation, actor, reason string) (*Result, error) {
	return act(ctx, store, conversation, actor, func(turn *projector.Turn) ([]events.Payload, string, string, error) {
		sp, _, ok := middlewares.ConversationPrompt(turn)
		if !ok {
			return nil, "", "", fmt.Errorf("%w to unlock", ErrNoPrompt)
		}
		if sp.Meta[events.MetaSystemPromptLock] == "" {
			return nil, sp.ID, "not locked", nil
		}
		return []events.Payload{events.SystemPromptUnlocked{BlockID: sp.ID, Reason: reason}}, sp.ID, "", nil
	})
}

// conflictRetries bounds how often an action is tried again on a Turn a
// worker moved meanwhile.
const conflictRetries = 5

// act loads the Turn, asks decide what to record, checks the events on a
// copy of the Turn with the projector's rules and appends them as one
// step expecting the Turn's last sequence; when a writer got there first
// it starts again from the new Turn.
func act(ctx context.Context, store Store, conversation, actor string,
	decide func(*projector.Turn) (out []events.Payload, blockID, note string, err error)) (*Result, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if !strings.HasPrefix(actor, ActorPrefix) {
		return nil, fmt.Errorf("%w: actor %q: make it with operator.Actor", ErrInvalid, actor)
	}
	for attempt := 0; ; attempt++ {
		turn, err := store.Load(ctx, conversation)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", conversation, err)
		}
		payloads, blockID, note, err := decide(turn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", conversation, err)
		}
		res := &Result{Conversation: conversation, BlockID: blockID, Events: []events.Type{}, Note: note}
		if len(payloads) == 0 {
			return res, nil
		}
		cause := "operator-" + ulid.Make().String()
		evs := make([]events.Event, len(payloads))
		check := turn.Clone()
		for i, p := range payloads {
			evs[i] = events.New(conversation, cause, 0, actor, p)
			if err := projector.Apply(check, evs[i]); err != nil {
				return nil, fmt.Errorf("%s: %w", conversation, err)
			}
			res.Events = append(res.Events, p.EventType())
		}
		_, err = store.Append(ctx, conversation, turn.Seq, evs...)
		if errors.Is(err, eventlog.ErrConflict) && attempt < conflictRetries {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("record on %s: %w", conversation, err)
		}
		res.Changed, res.At = true, check.Events
		return res, nil
	}
}

// PromptView is a conversation's system prompt as `turnlog prompt show -o
// json` and GET /conversations/{id}/prompt answer it.
type PromptView struct {
	Conversation string `json:"conversation"`
	// Events counts the conversation's events.
	Events int `json:"events"`
	// SystemPrompt is the active prompt with its history; null when the
	// conversation has none.
	SystemPrompt *replay.ActivePrompt `json:"system_prompt"`
}

// Show re-projects the conversation from its events (not from a snapshot)
// and returns its system prompt with its history. A conversation without
// events is replay.ErrNoEvents.
func Show(ctx context.Context, src replay.Source, conversation string) (*PromptView, error) {
	pt, err := replay.Latest(ctx, src, conversation)
	if err != nil {
		return nil, err
	}
	return &PromptView{Conversation: pt.Conversation, Events: pt.Events, SystemPrompt: pt.SystemPrompt}, nil
}
