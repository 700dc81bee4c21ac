package events

import (
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
)

// Event is the envelope every change to a conversation travels in. The
// log's order is the stream sequence of the message that carried a step,
// then the event's position inside that message.
type Event struct {
	// ID identifies the event itself; ULIDs sort by creation time.
	ID ulid.ULID `json:"id"`
	// Conversation is the conversation the event belongs to.
	Conversation string `json:"conversation"`
	// Type and Version select the payload's schema.
	Type    Type `json:"type"`
	Version int  `json:"version"`
	// Time is when the event was created, in UTC.
	Time time.Time `json:"time"`
	// Cause is the ID of the request that caused the event, and Step its
	// position within that request: <cause>:<step> makes an append
	// idempotent, so a retried step is stored once.
	Cause string `json:"cause"`
	Step  int    `json:"step"`
	// Actor is who emitted the event: a middleware name, the worker, import.
	Actor string `json:"actor"`
	// Payload is the typed body; its EventType always equals Type.
	Payload Payload `json:"payload"`
}

// New builds an event with a fresh ULID, the current time and the current
// schema version of p's type, so writers cannot get those wrong.
func New(conversation, cause string, step int, actor string, p Payload) Event {
	return Event{
		ID:           ulid.Make(),
		Conversation: conversation,
		Type:         p.EventType(),
		Version:      catalog.current(p.EventType()),
		Time:         time.Now().UTC(),
		Cause:        cause,
		Step:         step,
		Actor:        actor,
		Payload:      p,
	}
}

// Validate checks the envelope and its payload and returns a *FieldError
// naming the first field that is wrong. It is the gate every event passes
// before it is encoded or applied.
func (e Event) Validate() error {
	if e.ID == (ulid.ULID{}) {
		return fieldErr("id", "is the zero ULID")
	}
	if err := ValidateConversationID(e.Conversation); err != nil {
		return fieldCause("conversation", err)
	}
	if e.Type == "" {
		return fieldErr("type", "is empty")
	}
	if e.Version < 1 {
		return fieldErr("version", "is %d; versions start at 1", e.Version)
	}
	if e.Time.IsZero() {
		return fieldErr("time", "is zero")
	}
	if e.Cause == "" {
		return fieldErr("cause", "is empty; it names the request that caused the event")
	}
	if e.Step < 0 {
		return fieldErr("step", "is %d; steps count from 0", e.Step)
	}
	if e.Actor == "" {
		return fieldErr("actor", "is empty; it names who emitted the event")
	}
	if e.Payload == nil {
		return fieldErr("payload", "is missing")
	}
	if pt := e.Payload.EventType(); pt != e.Type {
		return fieldErr("payload", "is a %s payload in a %s event", pt, e.Type)
	}
	if err := e.Payload.Validate(); err != nil {
		return prefixed("payload", err)
	}
	return nil
}

// String is a short description for logs and error messages.
func (e Event) String() string {
	return fmt.Sprintf("%s %s (cause %s step %d, by %s)", e.Type, e.ID, e.Cause, e.Step, e.Actor)
}
