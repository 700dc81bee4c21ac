package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/eventlog"
)

// Latest re-projects a whole conversation, without reading snapshots, and
// returns it as it stands after its last event: what `turnlog prompt show`
// and GET /conversations/{id}/prompt report. A conversation without events
// is ErrNoEvents.
func Latest(ctx context.Context, src Source, conversation string, opts ...Option) (*Point, error) {
	o := collect(opts)
	w, total, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error { return w.apply(r) })
	if errors.Is(err, ErrNoEvents) {
		return nil, err // it names the conversation
	}
	if err != nil {
		// No command's name: `prompt show` and the HTTP API call it.
		return nil, fmt.Errorf("re-project %s: %w", conversation, err)
	}
	return &Point{Conversation: conversation, At: total, Events: total, Turn: w.turn, SystemPrompt: w.active()}, nil
}
