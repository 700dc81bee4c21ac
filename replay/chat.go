package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/chatfile"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// The chat file format lives in package chatfile; these names keep
// replay's API.
type (
	// Chat is chatfile.Chat.
	Chat = chatfile.Chat
	// ChatMessage is chatfile.Message.
	ChatMessage = chatfile.Message
	// ChatToolCall is chatfile.ToolCall.
	ChatToolCall = chatfile.ToolCall
	// ChatFunction is chatfile.Function.
	ChatFunction = chatfile.Function
	// ImportPlan is chatfile.ImportPlan.
	ImportPlan = chatfile.ImportPlan
)

// Roles of chat messages, and the names an import records (see chatfile).
const (
	RoleSystem    = chatfile.RoleSystem
	RoleDeveloper = chatfile.RoleDeveloper
	RoleUser      = chatfile.RoleUser
	RoleAssistant = chatfile.RoleAssistant
	RoleTool      = chatfile.RoleTool
	MetaModel     = chatfile.MetaModel
	ActorImport   = chatfile.ActorImport
)

// ChatFromTurn is chatfile.FromTurn.
func ChatFromTurn(t *projector.Turn, model string, created, updated time.Time) *Chat {
	return chatfile.FromTurn(t, model, created, updated)
}

// ParseChat is chatfile.Parse.
func ParseChat(data []byte) (*Chat, error) { return chatfile.Parse(data) }

// PlanImport is chatfile.PlanImport.
func PlanImport(path string, c *Chat, now time.Time) (*ImportPlan, error) {
	return chatfile.PlanImport(path, c, now)
}

func cloneMeta(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Exported is a conversation read for export: its Turn, re-projected from
// the log, and its chat rendering.
type Exported struct {
	Turn *projector.Turn
	Chat *Chat
}

// Export reads a conversation once, from its events (not from a
// snapshot), and renders it (see Chat). The model is that of the last
// model call, or for an imported conversation the MetaModel of its last
// assistant block.
func Export(ctx context.Context, src Source, conversation string, opts ...Option) (*Exported, error) {
	o := collect(opts)
	var first, last time.Time
	model, called := "", false
	w, _, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		if first.IsZero() {
			first = r.Time
		}
		last = r.Time
		if p, ok := r.Payload.(events.InferenceStarted); ok {
			model, called = p.Model, true
		}
		return w.apply(r)
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", conversation, err)
	}
	if !called {
		for i := len(w.turn.Blocks) - 1; i >= 0; i-- {
			if m := w.turn.Blocks[i].Meta[MetaModel]; m != "" {
				model = m
				break
			}
		}
	}
	return &Exported{Turn: w.turn, Chat: ChatFromTurn(w.turn, model, first, last)}, nil
}

// ImportStore is what Import needs of a log; *eventlog.Log implements it.
type ImportStore interface {
	Source
	Append(ctx context.Context, conversation string, expectedSeq uint64, evs ...events.Event) (uint64, error)
}

// Import outcomes, the values of ImportResult.Status.
const (
	StatusImported  = "imported"
	StatusUnchanged = "unchanged"
)

// ImportResult says what Import did with one plan.
type ImportResult struct {
	Path         string `json:"path"`
	Conversation string `json:"conversation"`
	Events       int    `json:"events"`
	// Status is "imported", or "unchanged" when the same content was
	// imported before.
	Status string `json:"status"`
}

// ErrExists is returned by Import and Fork when the target conversation
// already has events of another origin.
var ErrExists = errors.New("conversation already exists")

// firstEvent reads a conversation's first event, if it has one.
func firstEvent(ctx context.Context, src Source, conversation string) (eventlog.Record, bool, error) {
	for r, err := range src.Events(ctx, conversation) {
		return r, err == nil, err
	}
	return eventlog.Record{}, false, nil
}

// Import appends the plans' events, each plan as one message expecting an
// empty conversation (so it lands whole or not at all). All plans are
// checked first: two plans for one conversation, or a conversation that
// already holds other events, fail the whole import before anything is
// written. A conversation whose first event is this content's import is
// left as it is (StatusUnchanged), even if it was continued since.
func Import(ctx context.Context, store ImportStore, plans []*ImportPlan) ([]ImportResult, error) {
	seen := map[string]string{}
	var errs []error
	results := make([]ImportResult, len(plans))
	for i, p := range plans {
		results[i] = ImportResult{Path: p.Path, Conversation: p.Conversation, Events: len(p.Events), Status: StatusImported}
		if other, dup := seen[p.Conversation]; dup {
			errs = append(errs, fmt.Errorf("%s: conversation %s is also imported from %s; give the files different ids", p.Path, p.Conversation, other))
			continue
		}
		seen[p.Conversation] = p.Path
		first, found, err := firstEvent(ctx, store, p.Conversation)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", p.Path, err)
		}
		switch {
		case !found:
		case first.Cause == p.Cause:
			results[i].Status = StatusUnchanged
		default:
			errs = append(errs, fmt.Errorf("%s: %w: %s was started by request %s, not by an import of this content; erase it first or change the file's id",
				p.Path, ErrExists, p.Conversation, first.Cause))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("import: nothing imported: %w", errors.Join(errs...))
	}
	for i, p := range plans {
		if results[i].Status == StatusUnchanged {
			continue
		}
		if _, err := store.Append(ctx, p.Conversation, 0, p.Events...); err != nil {
			switch {
			case errors.Is(err, eventlog.ErrConflict):
				err = fmt.Errorf("%w: another writer created %s meanwhile", ErrExists, p.Conversation)
			case errors.Is(err, jetstream.ErrMsgNotFound):
				// JetStream still remembers the step's message ID from an
				// import that was erased since, and drops the new message
				// as a duplicate of one that is gone.
				return results[:i], fmt.Errorf("import %s: this content was imported into %s and erased less than the stream's duplicate window ago (2 minutes by default); nothing was stored: run the import again after the window", p.Path, p.Conversation)
			}
			return results[:i], fmt.Errorf("import %s: %w (the files before it are imported; run the import again to finish: they are left unchanged)", p.Path, err)
		}
	}
	return results, nil
}
