package replay

import (
	"context"
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
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", conversation, err)
	}
	return &Point{Conversation: conversation, At: total, Events: total, Turn: w.turn, SystemPrompt: w.active()}, nil
}
