package eventlog

// A conversation's steps one at a time, from its last back: what a worker
// reads to resume a redelivered request.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnlog/turnlog/events"
)

// Tail describes a conversation's last message: where it is and which step
// of which request it was. A worker uses it to resume a redelivered request
// (or to see that it already finished) with one direct get, whatever the
// conversation's length.
type Tail struct {
	// Seq is the stream sequence of the last message, 0 for a new
	// conversation.
	Seq uint64
	// Cause and Step identify the step the message carried.
	Cause string
	Step  int
	// Events are the step's events.
	Events []events.Event
	// Stored is when the stream stored the message.
	Stored time.Time
	// Prev is the conversation's message before this one, as the server
	// checked when it stored this one (Append's expected sequence); 0 for
	// the first, or when the message carries no such link.
	Prev uint64
}

// Closed reports whether the step ended its request (request.completed or
// request.failed).
func (t Tail) Closed() bool {
	for _, e := range t.Events {
		if e.Type == events.TypeRequestCompleted || e.Type == events.TypeRequestFailed {
			return true
		}
	}
	return false
}

// Last returns the conversation's last message, decoded. When it is not a
// step of the conversation (ErrCorruptMessage), the error says so and the
// Tail still has its Seq and Stored time.
func (l *Log) Last(ctx context.Context, conversation string) (Tail, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return Tail{}, err
	}
	m, err := l.lastMsg(ctx, conversation)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Tail{}, nil
	}
	if err != nil {
		return Tail{}, fmt.Errorf("last message of %s: %w", conversation, err)
	}
	t, err := tailOf(conversation, m)
	if err != nil {
		return t, fmt.Errorf("last message of %s: %w", conversation, err)
	}
	return t, nil
}

// Before returns the conversation's message before t (Tail.Prev), read as
// Last reads the last one; ok is false when t has no known predecessor.
// A worker walks back through a request's steps with it.
func (l *Log) Before(ctx context.Context, conversation string, t Tail) (prev Tail, ok bool, err error) {
	if t.Prev == 0 {
		return Tail{}, false, nil
	}
	m, err := l.msgAt(ctx, conversation, t.Prev)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Tail{}, false, nil
	}
	if err != nil {
		return Tail{}, false, fmt.Errorf("read %s: message %d: %w", conversation, t.Prev, err)
	}
	if !l.sameConversation(conversation, m.Subject) {
		return Tail{}, false, nil
	}
	prev, err = tailOf(conversation, m)
	if err != nil {
		return prev, false, fmt.Errorf("read %s: %w", conversation, err)
	}
	return prev, true, nil
}

// tailOf reads one stored step of a conversation.
func tailOf(conversation string, m *jetstream.RawStreamMsg) (Tail, error) {
	t := Tail{Seq: m.Sequence, Stored: m.Time}
	if v := m.Header.Get(jetstream.ExpectedLastSubjSeqHeader); v != "" {
		if prev, err := strconv.ParseUint(v, 10, 64); err == nil && prev < m.Sequence {
			t.Prev = prev
		}
	}
	evs, err := decodeStep(conversation, m.Sequence, m.Data)
	if err != nil {
		// The sequence and time are known all the same.
		return t, err
	}
	t.Cause, t.Step, t.Events = evs[0].Cause, evs[0].Step, evs
	return t, nil
}
