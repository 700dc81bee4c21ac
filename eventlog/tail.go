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
	// Seq is the stream sequence of the conversation's last message, 0 for
	// a new conversation: what the next append expects. It is the step's
	// (StepSeq) unless messages turnlog did not write follow the step (see
	// ErrForeignMessage).
	Seq uint64
	// StepSeq is the stream sequence of the conversation's last step, the
	// message the fields below describe; 0 when it has none.
	StepSeq uint64
	// MsgID is the message ID of the last message (Seq), "" when it has
	// none: what a snapshot of the Turn that ends with it names.
	MsgID string
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

// Last returns the conversation's last step, decoded, and the sequence
// of its last message (Tail.Seq), which messages turnlog did not write
// may follow (see ErrForeignMessage): they are passed over. When the last
// step is not a step of the conversation (ErrCorruptMessage), the error
// says so and the Tail still has its Seq and Stored time.
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
	seq, id := m.Sequence, m.Header.Get(jetstream.MsgIDHeader)
	if foreignReason(m.Header) != "" {
		if m, err = l.stepBefore(ctx, conversation, m.Sequence); err != nil {
			return Tail{}, fmt.Errorf("last step of %s: %w", conversation, err)
		}
		if m == nil {
			return Tail{Seq: seq, MsgID: id}, nil // no step: only foreign messages
		}
	}
	t, err := tailOf(conversation, m)
	t.Seq, t.MsgID = seq, id
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
	if foreignReason(m.Header) != "" {
		// A step appended after a foreign message links to it.
		if m, err = l.stepBefore(ctx, conversation, m.Sequence); err != nil || m == nil {
			return Tail{}, false, err
		}
	}
	prev, err = tailOf(conversation, m)
	prev.MsgID = m.Header.Get(jetstream.MsgIDHeader)
	if err != nil {
		return prev, false, fmt.Errorf("read %s: %w", conversation, err)
	}
	return prev, true, nil
}

// stepBefore returns the conversation's last message below sequence seq
// that turnlog may have written, nil when there is none. Only a foreign
// message sends a read here: its link, if any, is not the server's (see
// foreign.go), so the conversation's messages are read up to it, one
// batched read. A cost for the conversations where someone left foreign
// messages (a repair removes them), not for the others.
func (l *Log) stepBefore(ctx context.Context, conversation string, seq uint64) (*jetstream.RawStreamMsg, error) {
	var step *jetstream.RawStreamMsg
	for raw, err := range l.rawMessages(ctx, conversation) {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", conversation, err)
		}
		if raw.Sequence >= seq {
			break
		}
		if foreignReason(raw.Header) == "" {
			step = raw
		}
	}
	return step, nil
}

// tailOf reads one stored step of a conversation.
func tailOf(conversation string, m *jetstream.RawStreamMsg) (Tail, error) {
	t := Tail{Seq: m.Sequence, StepSeq: m.Sequence, Stored: m.Time, MsgID: m.Header.Get(jetstream.MsgIDHeader)}
	if v := m.Header.Get(jetstream.ExpectedLastSubjSeqHeader); v != "" {
		if prev, err := strconv.ParseUint(v, 10, 64); err == nil && prev < m.Sequence {
			t.Prev = prev
		}
	}
	evs, err := readStep(conversation, m)
	if err != nil {
		// The sequence and time are known all the same.
		return t, err
	}
	t.Cause, t.Step, t.Events = evs[0].Cause, evs[0].Step, evs
	return t, nil
}
