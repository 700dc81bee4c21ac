package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
)

// ErrConflict is returned by Append when another writer appended to the
// conversation since expectedSeq: reload, re-decide, and append again.
// Both JetStream codes for a stale expected sequence (10071 on a single
// server, 10164 on replicated streams) map to it.
var ErrConflict = errors.New("conversation changed since it was loaded")

// ErrCauseReused is returned when a step's <cause>:<step> was already stored
// in another conversation: request IDs must be unique across conversations,
// because the message ID that makes retries idempotent is.
var ErrCauseReused = errors.New("request ID already used by another conversation")

// ErrStepExists is returned when a step's <cause>:<step> is already stored
// in the conversation, followed by later steps: the step was done before.
var ErrStepExists = errors.New("step already stored earlier in the conversation")

// ErrTooLarge is returned when a step's encoded events exceed the server's
// maximum message size (as a *TooLargeError, which says by how much).
var ErrTooLarge = errors.New("step too large")

// ConflictError says which sequence the writer expected and which one the
// log is at. It matches ErrConflict with errors.Is.
type ConflictError struct {
	Conversation string
	Expected     uint64
	Actual       uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("append to %s: expected last sequence %d, but the log is at %d: %v; reload and retry",
		e.Conversation, e.Expected, e.Actual, ErrConflict)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// StepID is the message ID of a step, <cause>:<step>: the same step
// appended twice is stored once.
func StepID(cause string, step int) string { return cause + ":" + strconv.Itoa(step) }

// Append stores evs, which must all be one step (same conversation, cause
// and step), as one message: they land all or none. expectedSeq is the
// stream sequence of the conversation's last message as the caller last
// saw it (Turn.Seq, 0 for a new conversation); if the log has moved on,
// Append returns an error matching ErrConflict and stores nothing.
//
// Retrying a step that was already stored returns its sequence and stores
// nothing new, even after the duplicate window: the conflict path compares
// the stored message's ID and bytes with this step's. The same step ID with
// other events (a step redone after a crash) is a conflict: the log's
// version wins.
//
// It returns the sequence of the stored message, the next expectedSeq.
func (l *Log) Append(ctx context.Context, conversation string, expectedSeq uint64, evs ...events.Event) (uint64, error) {
	return l.appendStep(ctx, conversation, expectedSeq, "", evs)
}

// ForeignStepID is the message ID of a step whose <cause>:<step> another
// conversation already holds (a client reused a request ID): the
// conversation's ID added, so the step can still be stored, where the plain
// ID would be dropped as that other step's duplicate.
func ForeignStepID(cause string, step int, conversation string) string {
	return StepID(cause, step) + ":" + conversation
}

// AppendForeignStep is Append with the message ID ForeignStepID instead of
// StepID: how the failure of a request whose ID another conversation used
// is recorded in its own conversation, under that request ID.
func (l *Log) AppendForeignStep(ctx context.Context, conversation string, expectedSeq uint64, evs ...events.Event) (uint64, error) {
	if len(evs) == 0 {
		return 0, fmt.Errorf("append to %s: %w: no events", conversation, events.ErrInvalid)
	}
	return l.appendStep(ctx, conversation, expectedSeq, ForeignStepID(evs[0].Cause, evs[0].Step, conversation), evs)
}

// appendStep is Append with the message ID msgID ("" for StepID).
func (l *Log) appendStep(ctx context.Context, conversation string, expectedSeq uint64, msgID string, evs []events.Event) (uint64, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return 0, fmt.Errorf("append: %w", err)
	}
	if len(evs) == 0 {
		return 0, fmt.Errorf("append to %s: %w: no events", conversation, events.ErrInvalid)
	}
	if err := l.ensureHandles(ctx); err != nil {
		return 0, fmt.Errorf("append to %s: %w", conversation, err)
	}
	if err := l.checkServer(); err != nil {
		return 0, fmt.Errorf("append to %s: %w", conversation, err)
	}
	cause, step := evs[0].Cause, evs[0].Step
	for i, e := range evs {
		if e.Conversation != conversation {
			return 0, fmt.Errorf("append to %s: %w: event %d belongs to conversation %q", conversation, events.ErrInvalid, i, e.Conversation)
		}
		if e.Cause != cause || e.Step != step {
			return 0, fmt.Errorf("append to %s: %w: event %d is step %s, the message is step %s; append each step separately",
				conversation, events.ErrInvalid, i, StepID(e.Cause, e.Step), StepID(cause, step))
		}
	}
	sm := getStepMsg()
	defer putStepMsg(sm)
	data, err := events.AppendEncode(sm.buf[:0], evs...)
	if err != nil {
		return 0, fmt.Errorf("append to %s: %w", conversation, err)
	}
	sm.buf = data
	if max := l.nc.MaxPayload(); int64(len(data)) > max-1024 {
		return 0, &TooLargeError{Conversation: conversation, Size: len(data), Max: int(max - 1024)}
	}
	if msgID == "" {
		msgID = StepID(cause, step)
	}
	names := l.Names()
	subject, filter := l.appendSubjects(conversation)
	sm.set(subject, data, msgID, strconv.FormatUint(expectedSeq, 10), filter)
	msg := &sm.msg
	for attempt := 0; ; attempt++ {
		ack, err := l.publish(ctx, msg, names.EventsStreamOf(conversation))
		if err == nil {
			if ack.Duplicate {
				// Message IDs are deduplicated across the whole stream, so a
				// cause reused in another conversation would drop this step
				// silently. Make sure the stored step is ours.
				stored, err := l.MessageAt(ctx, l.streamFor(conversation), ack.Sequence)
				if err != nil {
					return 0, fmt.Errorf("append to %s: checking duplicate step %s: %w", conversation, msgID, err)
				}
				if !l.sameConversation(conversation, stored.Subject) {
					return 0, fmt.Errorf("append to %s: %w: step %s was already stored in conversation %s; use a fresh request ID per request",
						conversation, ErrCauseReused, msgID, names.ConversationOf(stored.Subject))
				}
				if !bytes.Equal(stored.Data, data) {
					// Another attempt at this step stored other events (a
					// model answered differently): the log has the truth.
					return 0, &ConflictError{Conversation: conversation, Expected: expectedSeq, Actual: ack.Sequence}
				}
				if ack.Sequence != expectedSeq {
					// A retry of the conversation's last step, acknowledged as
					// a duplicate: a replicated stream checks the message ID
					// before the expected sequence (a single server answers
					// the same retry with a sequence conflict, handled below).
					// Stored once: go on from it, if it is the conversation's
					// last step as the stream holds it (its leader's, on a
					// cluster: a replica that had not applied a later step
					// yet would show this one as the last, and an old step
					// redone would pass for done).
					last, lerr := l.committedLast(ctx, conversation)
					if lerr != nil && !errors.Is(lerr, jetstream.ErrMsgNotFound) {
						return 0, fmt.Errorf("append to %s: checking duplicate step %s: %w", conversation, msgID, lerr)
					}
					switch {
					case lerr != nil || last.Sequence <= ack.Sequence:
					case last.Sequence != expectedSeq:
						// The writer is behind as well: what a single server
						// reports as a sequence conflict.
						return 0, &ConflictError{Conversation: conversation, Expected: expectedSeq, Actual: last.Sequence}
					default:
						// Stored earlier, with other steps after it: its
						// sequence is not where the conversation is now.
						return 0, fmt.Errorf("append to %s: %w: step %s is message %d, and the conversation has moved on since",
							conversation, ErrStepExists, msgID, ack.Sequence)
					}
				}
			}
			return ack.Sequence, nil
		}
		if !isWrongLastSequence(err) {
			return 0, fmt.Errorf("append to %s: %w", conversation, err)
		}
		// The sequence check runs before deduplication, so a retry of a step
		// that was stored comes back as a conflict. The last message tells,
		// as the stream holds it (its leader's, on a cluster: a lagging
		// replica's would be older than what was refused).
		last, lerr := l.committedLast(ctx, conversation)
		if lerr != nil {
			if errors.Is(lerr, jetstream.ErrMsgNotFound) {
				return 0, &ConflictError{Conversation: conversation, Expected: expectedSeq, Actual: 0}
			}
			return 0, fmt.Errorf("append to %s: conflict, and reading the last message failed: %w", conversation, lerr)
		}
		// Only the very same step counts as stored: an earlier attempt at
		// this step that stored other events (a redone model call, or a read
		// from a lagging replica that made the caller redo a step) is a
		// conflict, so the caller reloads the log's version instead of going
		// on from its own.
		if last.Header.Get(jetstream.MsgIDHeader) == msgID && bytes.Equal(last.Data, data) {
			return last.Sequence, nil
		}
		if last.Sequence == expectedSeq && attempt < refusedAtExpectedRetries {
			// Refused, yet the log ends where the caller expected: no one
			// else wrote. A stream leader that had not applied the last
			// steps yet (just elected, on a cluster) refuses so; it is not a
			// conflict. Send the step again, fenced as before.
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("append to %s: %w", conversation, ctx.Err())
			case <-time.After(time.Duration(attempt+1) * 50 * time.Millisecond):
			}
			continue
		}
		return 0, &ConflictError{Conversation: conversation, Expected: expectedSeq, Actual: last.Sequence}
	}
}

// refusedAtExpectedRetries is how many times Append sends a step again
// that the server refused for its expected sequence while the log ended
// at that very sequence (see appendStep).
const refusedAtExpectedRetries = 3

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
