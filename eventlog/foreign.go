package eventlog

// Messages on a conversation's subjects that turnlog did not write.
//
// nats-server checks a client's permissions on the subject it publishes
// to, never on the reply subject it names. So any client may send a
// request it is allowed (a JetStream API call, a direct get, a chat
// request, a status ping) naming a conversation's events subject as the
// reply subject, and the server (or a worker answering the ping) publishes
// the answer there, where the events stream stores it: a JSON answer or a
// PubAck without headers, or a direct get's copy of any message the client
// may read, data and headers, with the server's own headers added
// (Nats-Stream, Nats-Subject, Nats-Sequence, Nats-Time-Stamp).
//
// Neither is a step, and neither can pass for one: every message turnlog
// stores on an events subject (Append, and a repair's copies and audit
// step) carries a Nats-Msg-Id header, since the first version of Append;
// none carries Nats-Stream or Nats-Sequence (a repair drops every Nats-
// header of what it copies). A message without a message ID, or with the
// server's headers stored in it, is foreign: every read skips it, names it
// where it reports what it read (EventsWithForeign), and goes on; the Turn
// counts it only in its Seq, the conversation's last message, which the
// next append's expected sequence must name. A message with turnlog's
// headers that is not a step of the conversation is not foreign: it may
// be a damaged step, and stays quarantined (ErrCorruptMessage).

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
)

// ErrForeignMessage is matched by the error naming a message on a
// conversation's events subject that turnlog did not write: a NATS reply a
// client had the server publish there, or another client's publish. Reads
// skip such messages (they never block a conversation nor enter its
// Turn); EventsWithForeign names each; `turnlog repair` removes them.
var ErrForeignMessage = errors.New("message not written by turnlog")

// ForeignMessageError names a foreign message: where it is, how large, and
// why it is known not to be turnlog's. It matches ErrForeignMessage.
type ForeignMessageError struct {
	Conversation string
	// Seq is the message's stream sequence.
	Seq uint64
	// Size is its length in bytes.
	Size int
	// Subject is the subject it is stored on.
	Subject string
	// Reason says which of its headers shows that turnlog did not write it.
	Reason string
	// Time is when the stream stored it (zero when the read did not say).
	Time time.Time
}

func (e *ForeignMessageError) Error() string {
	return fmt.Sprintf("conversation %s: message %d (%d bytes): not written by turnlog (a NATS reply or another client's publish: %s), ignored",
		e.Conversation, e.Seq, e.Size, e.Reason)
}

// Is makes errors.Is(err, ErrForeignMessage) true.
func (e *ForeignMessageError) Is(target error) bool { return target == ErrForeignMessage }

// timeStampHeader is the header in which a direct get gives the time the
// stream stored the message.
const timeStampHeader = "Nats-Time-Stamp"

// serverValue is the value nats-server gave header key in a direct get's
// answer: the last one, since the server adds its headers after those
// stored with the message, which may hold the same keys (a stored answer
// to another direct get). nats.go and jetstreamext read the first.
func serverValue(h nats.Header, key string) string {
	v := h[key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// StoredCopy reports whether a message read by a direct get holds the
// server's headers stored with it (Nats-Stream and Nats-Sequence twice):
// it is a direct get's answer, a copy of another message, that a client
// had stored by naming its subject as a reply subject, not a message
// anyone published there. The events, the dead letters and the
// templates refuse such copies alike.
func StoredCopy(h nats.Header) bool {
	return len(h[jetstream.StreamHeader]) > 1 && len(h[jetstream.SequenceHeader]) > 1
}

// fromServer corrects a message read by a direct get whose stored headers
// hold the server's own (Nats-Sequence twice): nats.go and jetstreamext
// took its sequence, subject and time from the stored copy, that of the
// message it copies. It returns raw.
func fromServer(raw *jetstream.RawStreamMsg) *jetstream.RawStreamMsg {
	if raw == nil || !StoredCopy(raw.Header) {
		return raw
	}
	if seq, err := strconv.ParseUint(serverValue(raw.Header, jetstream.SequenceHeader), 10, 64); err == nil {
		raw.Sequence = seq
	}
	if subj := serverValue(raw.Header, jetstream.SubjectHeader); subj != "" {
		raw.Subject = subj
	}
	if t, err := time.Parse(time.RFC3339Nano, serverValue(raw.Header, timeStampHeader)); err == nil {
		raw.Time = t
	}
	return raw
}

// asDirectGet gives a message read with STREAM.MSG.GET, whose headers are
// those stored, the headers a direct get adds, so that every read of the
// log sees the same headers (see foreignReason).
func asDirectGet(raw *jetstream.RawStreamMsg, stream string) *jetstream.RawStreamMsg {
	if raw.Header == nil {
		raw.Header = nats.Header{}
	}
	raw.Header.Add(jetstream.StreamHeader, stream)
	raw.Header.Add(jetstream.SubjectHeader, raw.Subject)
	raw.Header.Add(jetstream.SequenceHeader, strconv.FormatUint(raw.Sequence, 10))
	raw.Header.Add(timeStampHeader, raw.Time.UTC().Format(time.RFC3339Nano))
	return raw
}

// foreignReason says why a message read by a direct get (its headers:
// those stored, then those the server added) was not written by turnlog,
// "" when it may have been.
func foreignReason(h nats.Header) string {
	if StoredCopy(h) {
		return fmt.Sprintf("it carries the headers of a direct get's answer, a copy of %s's message %s", quoteHeader(h[jetstream.StreamHeader][0]), quoteHeader(h[jetstream.SequenceHeader][0]))
	}
	if h.Get(jetstream.MsgIDHeader) == "" {
		return "it has no Nats-Msg-Id header, which every step turnlog stores has"
	}
	return ""
}

// quoteHeader quotes a header value someone else chose, cut short.
func quoteHeader(v string) string {
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return strconv.Quote(v)
}

// foreignError is the *ForeignMessageError for raw, nil when turnlog may
// have written it.
func foreignError(conversation string, raw *jetstream.RawStreamMsg) *ForeignMessageError {
	why := foreignReason(raw.Header)
	if why == "" {
		return nil
	}
	return &ForeignMessageError{Conversation: conversation, Seq: raw.Sequence, Size: len(raw.Data), Subject: raw.Subject, Reason: why, Time: raw.Time}
}

// readStep decodes raw, a message of conversation's subjects: its events,
// a *ForeignMessageError when turnlog did not write it, or a
// *CorruptMessageError when it did not decode as a step of it.
func readStep(conversation string, raw *jetstream.RawStreamMsg) ([]events.Event, error) {
	if fe := foreignError(conversation, raw); fe != nil {
		return nil, fe
	}
	return decodeStep(conversation, raw.Sequence, raw.Time, raw.Data)
}
