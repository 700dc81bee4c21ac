package chatclient

// This file holds how a waiting client learns that no worker will answer
// its request because a worker kept it as a dead letter (a conversation an
// app records through the gateway, a request that could not end in its
// conversation): said at the next poll, not after the whole deadline.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/eventlog"
)

// ErrDeadLettered matches the error of Ask when a worker kept the request
// as a dead letter instead of answering it (`turnlog status --dead` lists
// it); the error says why. Sending it again ends the same way.
var ErrDeadLettered = errors.New("the request was kept as a dead letter; no worker will answer it")

// deadLetters follows the dead letters stored after a request was sent.
// Where the dead-letters stream ended is read beside the send, not before
// it: a read held up (an election of that stream) must not hold up the
// request; until it is known, the wait does not look.
type deadLetters struct {
	read  chan struct{} // closed once after and known are set
	after uint64        // the dead-letters stream's last sequence looked at
	known bool          // after was read
}

// watchDeadLetters starts reading where the dead-letters stream ends.
func (c *Client) watchDeadLetters(ctx context.Context) *deadLetters {
	d := &deadLetters{read: make(chan struct{})}
	go func() {
		defer close(d.read)
		actx, cancel := context.WithTimeout(ctx, c.attempt)
		defer cancel()
		seq, err := c.log.DeadLetterSeq(actx)
		d.after, d.known = seq, err == nil
	}()
	return d
}

// deadLettered returns an error matching ErrDeadLettered when a dead
// letter stored since d.after is request id's of conversation conv.
func (c *Client) deadLettered(ctx context.Context, d *deadLetters, conv, id string) error {
	select {
	case <-d.read:
	default:
		return nil
	}
	if !d.known {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, c.attempt)
	defer cancel()
	last, err := c.log.DeadLetterSeq(actx)
	if err != nil || last <= d.after {
		return nil
	}
	subject := c.log.Names().ChatSubject(conv)
	var found *eventlog.DeadLetter
	err = c.log.DeadLettersAfter(actx, d.after, func(dl eventlog.DeadLetter) bool {
		var req struct {
			RequestID string `json:"request_id"`
		}
		if dl.Subject == subject && json.Unmarshal(dl.Data, &req) == nil && req.RequestID == id {
			found = &dl
			return false
		}
		return dl.Seq < last
	})
	if err != nil {
		return nil // looked at again at the next poll
	}
	if found != nil {
		return fmt.Errorf("%w: request %s of conversation %s: %s", ErrDeadLettered, id, conv, found.Reason)
	}
	d.after = last
	return nil
}
