package eventlog

import (
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
)

// ErrCorruptMessage is matched by the error for a message on a
// conversation's events subject that is not a step of that conversation:
// bytes that do not decode (garbage published by another NATS client) or
// events of another conversation. Readers name it and go on where they
// can (replay shows it as quarantined); `turnlog repair` removes it.
var ErrCorruptMessage = errors.New("message is not a step of this conversation")

// CorruptMessageError names a corrupt message: where it is, how large,
// and why it is not a step. It matches ErrCorruptMessage and unwraps to
// the decoding error (events.ErrInvalid, events.ErrUnknownEvent, ...).
type CorruptMessageError struct {
	Conversation string
	// Seq is the message's stream sequence.
	Seq uint64
	// Size is its length in bytes.
	Size int
	// Err says why it is not a step.
	Err error
	// Time is when the stream stored it (zero when the read did not say).
	Time time.Time
}

func (e *CorruptMessageError) Error() string {
	return fmt.Sprintf("conversation %s: message %d (%d bytes) is quarantined, it is not a step of this conversation: %v; remove it with `turnlog repair --yes %s`",
		e.Conversation, e.Seq, e.Size, e.Err, events.CommandArg(e.Conversation))
}

// Is makes errors.Is(err, ErrCorruptMessage) true.
func (e *CorruptMessageError) Is(target error) bool { return target == ErrCorruptMessage }

// Unwrap returns why the message is not a step.
func (e *CorruptMessageError) Unwrap() error { return e.Err }

// errForeignEvents: a message that decodes, but whose events name another
// conversation than its subject does.
var errForeignEvents = errors.New("its events belong to another conversation")

// decodeStep decodes the message at seq on conversation's subject, stored
// at at, or says why it is not one of its steps.
func decodeStep(conversation string, seq uint64, at time.Time, data []byte) ([]events.Event, error) {
	evs, err := events.DecodeOwned(data) // data is a message read, which nothing else holds
	if err != nil {
		return nil, &CorruptMessageError{Conversation: conversation, Seq: seq, Size: len(data), Err: err, Time: at}
	}
	for i := range evs {
		if evs[i].Conversation != conversation {
			return nil, &CorruptMessageError{Conversation: conversation, Seq: seq, Size: len(data), Time: at,
				Err: fmt.Errorf("%w: event %d names %q", errForeignEvents, i, evs[i].Conversation)}
		}
	}
	return evs, nil
}

// ErrUnappliable is matched by every error reading a conversation whose
// stored message decodes as steps but whose events do not apply to the
// conversation as the messages before it leave it (a step stored twice by
// a writer that bypassed the log's fences, a block it refers to missing):
// no retry helps, and a person must decide what the conversation is.
var ErrUnappliable = errors.New("a stored message's events do not apply to the conversation")

// UnappliableError is ErrUnappliable for one message: which, and the
// fold's own error.
type UnappliableError struct {
	Conversation string
	// Seq is the message's stream sequence.
	Seq uint64
	// Err is the fold's error (projector's).
	Err error
}

func (e *UnappliableError) Error() string {
	return fmt.Sprintf("conversation %s: message %d decodes, but its events do not apply to the conversation as the messages before it leave it: %v; "+
		"the log needs a person: `turnlog replay %s` shows the steps up to it, and `turnlog repair %s` says what can be done", e.Conversation, e.Seq, e.Err, events.CommandArg(e.Conversation), events.CommandArg(e.Conversation))
}

// Is makes errors.Is(err, ErrUnappliable) true.
func (e *UnappliableError) Is(target error) bool { return target == ErrUnappliable }

// Unwrap returns the fold's error.
func (e *UnappliableError) Unwrap() error { return e.Err }
