package chatclient

// This file holds how a waiting client learns that no worker will answer
// its request because a worker kept it as a dead letter (a conversation an
// app records through the gateway, a request that could not end in its
// conversation): said at the next poll, not after the whole deadline.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/eventlog"
)

// ErrDeadLettered matches the error of Ask when a worker kept the request
// as a dead letter instead of answering it (`turnlog status --dead` lists
// it); the error says why. Sending it again ends the same way.
var ErrDeadLettered = errors.New("the request was kept as a dead letter; no worker will answer it")

// deadLetters follows the dead letters that may be a request's. The first
// look reads those stored since a while before the request was sent (no
// read of where the stream ended comes before the send, to hold it up,
// nor after it, to miss a dead letter stored in between); each later one
// reads on from the last seen.
type deadLetters struct {
	since time.Time // where the first look starts
	after uint64    // the last dead letter looked at (0: none yet)
}

// watchDeadLetters starts following the dead letters of a request about
// to be sent. The first look goes back the requests stream's duplicate
// window: a re-send within it is dropped as the first send, whose dead
// letter is then the answer; it covers the clocks' skew besides.
func (c *Client) watchDeadLetters() *deadLetters {
	return &deadLetters{since: time.Now().Add(-c.log.DuplicateWindow())}
}

// deadLettered returns an error matching ErrDeadLettered when a dead
// letter d has not looked at yet is request id's of conversation conv.
func (c *Client) deadLettered(ctx context.Context, d *deadLetters, conv, id string) error {
	actx, cancel := context.WithTimeout(ctx, c.attempt)
	defer cancel()
	subject := c.log.Names().ChatSubject(conv)
	var found *eventlog.DeadLetter
	match := func(dl eventlog.DeadLetter) bool {
		d.after = max(d.after, dl.Seq)
		if dl.Subject == subject && dl.RequestID() == id {
			found = &dl
			return false
		}
		return true
	}
	if d.after == 0 {
		_ = c.log.DeadLettersSince(actx, d.since, match)
	} else {
		_ = c.log.DeadLettersAfter(actx, d.after, match)
	}
	// A read that failed is looked at again at the next poll, from where
	// it got to.
	if found != nil {
		return fmt.Errorf("%w: request %s of conversation %s: %s", ErrDeadLettered, id, conv, found.Reason)
	}
	return nil
}
