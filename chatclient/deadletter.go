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
)

// ErrDeadLettered matches the error of Ask when a worker kept the request
// as a dead letter instead of answering it (`turnlog status --dead` lists
// it); the error says why. Sending it again ends the same way.
var ErrDeadLettered = errors.New("the request was kept as a dead letter; no worker will answer it")

// deadLetters follows the dead letters stored after a request was sent.
type deadLetters struct {
	after uint64 // the dead-letters stream's last sequence already looked at
	known bool   // after was read: without it, dead letters are not looked at
}

// watchDeadLetters notes where the dead-letters stream ends before a
// request is sent. A failure to read it only means the wait does not look.
func (c *Client) watchDeadLetters(ctx context.Context) *deadLetters {
	actx, cancel := context.WithTimeout(ctx, c.attempt)
	defer cancel()
	seq, err := c.log.DeadLetterSeq(actx)
	return &deadLetters{after: seq, known: err == nil}
}

// deadLettered returns an error matching ErrDeadLettered when a dead
// letter stored since d.after is request id's of conversation conv.
func (c *Client) deadLettered(ctx context.Context, d *deadLetters, conv, id string) error {
	if !d.known {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, c.attempt)
	defer cancel()
	last, err := c.log.DeadLetterSeq(actx)
	if err != nil || last <= d.after {
		return nil
	}
	found, err := c.log.DeadLetters(actx, int(min(last-d.after, 100)))
	if err != nil {
		return nil // looked at again at the next poll
	}
	d.after = last
	subject := c.log.Names().ChatSubject(conv)
	for _, dl := range found {
		var req struct {
			RequestID string `json:"request_id"`
		}
		if dl.Subject == subject && json.Unmarshal(dl.Data, &req) == nil && req.RequestID == id {
			return fmt.Errorf("%w: request %s of conversation %s: %s", ErrDeadLettered, id, conv, dl.Reason)
		}
	}
	return nil
}
