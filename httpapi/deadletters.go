package httpapi

// This file holds how a conversation's live stream tells of a chat request
// that a worker kept as a dead letter instead of answering: that request
// never ends as request.completed or request.failed in the conversation,
// and a client waiting for one would wait for ever.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/eventlog"
)

// StreamDeadLetter is the data of a stream's "dead_letter" event: a chat
// request of the conversation that a worker kept as a dead letter (an
// app's conversation, a request that could not end in its conversation)
// instead of answering it. No request.completed or request.failed will
// follow for it; `turnlog status --dead` lists it.
type StreamDeadLetter struct {
	// RequestID is the request's ID: the request_id of its JSON, or its
	// Nats-Msg-Id header when the JSON has none.
	RequestID string `json:"request_id"`
	// Reason says why no worker will answer it.
	Reason string `json:"reason"`
	// Time is when the worker gave up on it.
	Time time.Time `json:"time"`
}

// deadLetterBuffer is how many dead-letter notices may wait for a slow
// client before NATS drops some (the dead-letters stream keeps them all).
const deadLetterBuffer = 256

// deadLetterOf returns the notice of m, a message on the dead-letters
// subject, when it is a dead letter of a request published on subject.
// The worker stores a dead letter by publishing it, so every subscriber
// hears it as it is stored; a message that is not a worker's dead letter
// is not one.
func deadLetterOf(m *nats.Msg, subject string) (StreamDeadLetter, bool) {
	var d eventlog.DeadLetter
	if json.Unmarshal(m.Data, &d) != nil || d.Subject != subject || d.Reason == "" || d.Time.IsZero() {
		return StreamDeadLetter{}, false
	}
	return StreamDeadLetter{RequestID: d.RequestID(), Reason: d.Reason, Time: d.Time}, true
}

// recentDeadLetters are the dead letters of requests published on subject
// that were stored within the requests stream's duplicate window, oldest
// first: what a client whose stream was cut a moment ago missed. A read
// that fails gives none (the live ones still come).
func (s *Server) recentDeadLetters(ctx context.Context, subject string) []StreamDeadLetter {
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	var out []StreamDeadLetter
	_ = s.cfg.Log.DeadLettersSince(ctx, time.Now().Add(-s.cfg.Log.DuplicateWindow()), func(d eventlog.DeadLetter) bool {
		if d.Subject == subject {
			out = append(out, StreamDeadLetter{RequestID: d.RequestID(), Reason: d.Reason, Time: d.Time})
		}
		return len(out) < deadLetterBuffer
	})
	return out
}
