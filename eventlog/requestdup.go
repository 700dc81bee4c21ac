package eventlog

// This file holds how a chat request that JetStream drops as a duplicate
// is told apart: the same request sent again to its conversation (stored
// once, as a re-send should be) or a request ID that another conversation
// already used (refused, so that the request does not vanish).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RequestIDReusedError is returned by PublishRequest when JetStream
// dropped the request as a duplicate of one sent under the same ID to
// another conversation within the requests stream's duplicate window:
// nothing was queued, and the sender must use another ID. It matches
// ErrCauseReused with errors.Is.
type RequestIDReusedError struct {
	// RequestID is the ID, Conversation the conversation this request was
	// sent to.
	RequestID    string
	Conversation string
	// Owner is the conversation the ID was sent to first, when the
	// requests stream (the request is still queued) or the request IDs
	// bucket (see ClaimRequestID) says; "" when neither does.
	Owner string
}

func (e *RequestIDReusedError) Error() string {
	which := fmt.Sprintf("conversation %q", e.Owner)
	if e.Owner == "" {
		which = fmt.Sprintf("another conversation (its first request is no longer queued, and %q holds none of its events)", e.Conversation)
	}
	return fmt.Sprintf("request_id %s is already used by %s, so nothing was queued for %q; send every request with a fresh request_id (or none, to have one generated)",
		e.RequestID, which, e.Conversation)
}

// Is makes errors.Is(err, ErrCauseReused) true.
func (e *RequestIDReusedError) Is(target error) bool { return target == ErrCauseReused }

// checkDuplicateRequest decides about a request that conversation sent
// under the ID id and that JetStream acknowledged as a duplicate of the
// requests stream's message seq: nil when that message is this
// conversation's request (a re-send), a *RequestIDReusedError when it is
// another conversation's. It runs only on a duplicate, so a request sent
// once costs no lookup; a duplicate costs one or two reads, and the read
// of the conversation when the request left the queue.
func (l *Log) checkDuplicateRequest(ctx context.Context, conversation, id string, seq uint64) error {
	reused := func(owner string) error {
		return &RequestIDReusedError{RequestID: id, Conversation: conversation, Owner: owner}
	}
	// Still queued (or in a worker's hands): its subject names its
	// conversation.
	reqs, err := l.requestsStream(ctx)
	if err != nil {
		return fmt.Errorf("check duplicate request %s: %w", id, err)
	}
	first, err := l.MessageAt(ctx, reqs, seq)
	switch {
	case err == nil:
		if owner := l.names.ConversationOf(first.Subject); owner != conversation {
			return reused(owner)
		}
		return nil
	case !errors.Is(err, jetstream.ErrMsgNotFound):
		return fmt.Errorf("check duplicate request %s: %w", id, err)
	}
	// Answered, so its events are in the log (a worker acknowledges a
	// request once its end is stored). A claim of the ID for another
	// conversation names that one; a claim for this conversation proves
	// nothing, since it may have been made without knowing of the other
	// (the API claims an ID before it sends the request).
	owner, err := l.claimOf(ctx, id)
	if err != nil {
		return fmt.Errorf("check duplicate request %s: %w", id, err)
	}
	if owner != "" && owner != conversation {
		return reused(owner)
	}
	for rec, err := range l.Events(ctx, conversation) {
		if errors.Is(err, ErrCorruptMessage) {
			continue // not a step: the request's may come after it
		}
		if err != nil {
			return fmt.Errorf("check duplicate request %s: %w", id, err)
		}
		if rec.Cause == id {
			return nil
		}
	}
	// Kept as a dead letter (an app's conversation, say): the sender's
	// wait finds it there. The first send was within the duplicate
	// window, and its dead letter names its sequence.
	var dead *DeadLetter
	err = l.DeadLettersSince(ctx, time.Now().Add(-l.opts.duplicates-time.Minute), func(d DeadLetter) bool {
		if d.RequestSeq == seq && d.RequestID() == id {
			dead = &d
			return false
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("check duplicate request %s: %w", id, err)
	}
	if dead != nil {
		if owner := l.names.ConversationOf(dead.Subject); owner != conversation {
			return reused(owner)
		}
		return nil
	}
	return reused("")
}
