// Package chatrequest is the chat request as any NATS client publishes it
// on turnlog.chat.<conversation>: its JSON shape, and the parsing and
// checks a worker applies before serving it. It has no dependency on NATS
// or the engines, so that its parser, which reads whatever anyone
// publishes, can be fuzzed cheaply (FuzzParse).
package chatrequest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
)

// Request is a chat request as published on turnlog.chat.<conversation>:
// JSON, so any NATS client (the nats CLI included) can send one.
type Request struct {
	// Conversation must equal the subject's last token; it may be omitted.
	Conversation string `json:"conversation,omitempty"`
	// RequestID is a ULID; when absent the worker derives one from the
	// request message, stable across redeliveries. It is the cause of every
	// event the request produces, and must be unique across conversations.
	RequestID string `json:"request_id,omitempty"`
	// Text is the user's message.
	Text string `json:"text"`
	// Profile selects how to answer (default "default").
	Profile string `json:"profile,omitempty"`
	// Model overrides the profile's model.
	Model string `json:"model,omitempty"`
	// Data are request/context values recorded as data.set (timezone, page
	// context, ...).
	Data map[string]string `json:"data,omitempty"`
}

// DefaultMaxTextBytes bounds a request's text.
const DefaultMaxTextBytes = 64 << 10

// Parse decodes and checks a request received on the subject of
// conversation, as message seq of the requests stream, published at at.
// It returns the request (with a derived ID when it had none) and,
// separately, why it cannot be served: such a request still ends as
// request.failed in its conversation, under its ID, so the sender learns
// why. Whatever data holds, the request returned belongs to conversation
// and has a valid ULID.
func Parse(data []byte, conversation string, seq uint64, at time.Time, maxText int) (r Request, problem string) {
	// Whatever the body says, the request belongs to the subject's
	// conversation: that is where its failure is recorded.
	defer func() { r.Conversation = conversation }()
	err := decode(data, &r)
	if r.RequestID != "" {
		if _, perr := ulid.ParseStrict(r.RequestID); perr != nil {
			bad := r.RequestID
			r.RequestID = derivedID(conversation, seq, at)
			return r, fmt.Sprintf("request_id %q is not a ULID (26 characters of Crockford base32); omit it to have one generated", truncate(bad, 40))
		}
	} else {
		r.RequestID = derivedID(conversation, seq, at)
	}
	switch {
	case err != nil:
		return r, err.Error()
	case r.Conversation != "" && r.Conversation != conversation:
		return r, fmt.Sprintf("the request names conversation %q but was sent to %q; they must match", truncate(r.Conversation, 40), conversation)
	case r.Text == "":
		return r, "the request has no text"
	case len(r.Text) > maxText:
		return r, fmt.Sprintf("the text is %d bytes; the limit is %d", len(r.Text), maxText)
	}
	for k, v := range r.Data {
		if k == "" || len(k) > 256 || len(v) > maxText {
			return r, fmt.Sprintf("data key %q: keys must be 1 to 256 bytes and values at most %d bytes", truncate(k, 40), maxText)
		}
	}
	return r, ""
}

// derivedID makes a ULID from the request message itself (its time and its
// stream sequence), so every redelivery of a request without an ID gets the
// same one and resumes instead of starting over.
func derivedID(conversation string, seq uint64, at time.Time) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", conversation, seq))
	return ulid.MustNew(ulid.Timestamp(at), bytes.NewReader(sum[:])).String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
