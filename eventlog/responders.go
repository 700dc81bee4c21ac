package eventlog

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
)

// respondersWait bounds how long a read waits for a stream's direct gets
// to be answered again: a replica that is catching up, or a server that
// just started or rejoined, answers none for a moment, and the cluster
// may briefly know of no server that does. A stream that is gone answers
// none for ever: past the bound, the read fails saying so.
const respondersWait = 5 * time.Second

// awaitResponders reports whether a read whose direct get found no
// responder (err) should ask again, after a short wait, and waits: while
// ctx allows, and for at most respondersWait since since was first set.
func awaitResponders(ctx context.Context, err error, since *time.Time) bool {
	if !errors.Is(err, nats.ErrNoResponders) {
		return false
	}
	if since.IsZero() {
		*since = time.Now()
	}
	if time.Since(*since) >= respondersWait {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(leaderWait):
		return true
	}
}
