package replay

import (
	"fmt"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// Timeline entries for messages on a conversation's subjects that are not
// its steps: quarantined ones (turnlog's headers, not a step of the
// conversation: a person must look) and foreign ones (not written by
// turnlog: ignored by every read).

// TypeQuarantined is the Type of a timeline entry that is a quarantined
// message, not an event.
const TypeQuarantined events.Type = "quarantined"

// Quarantined is a message that is not a step of the conversation.
type Quarantined struct {
	Seq    uint64 `json:"seq"`
	Size   int    `json:"size"`
	Reason string `json:"reason"`
}

// TypeForeign is the Type of a timeline entry that is a message turnlog
// did not write, not an event.
const TypeForeign events.Type = "foreign"

// Foreign is a message on a conversation's subjects that turnlog did not
// write: where, how large, on which subject, and the header that shows it.
type Foreign struct {
	Seq     uint64 `json:"seq"`
	Size    int    `json:"size"`
	Subject string `json:"subject"`
	Reason  string `json:"reason"`
}

// ForeignEntry is the timeline entry of a message turnlog did not write:
// the one place its summary is worded, so that the timeline and the HTTP
// API's live stream (its "foreign" event) say the same thing.
func ForeignEntry(alien *eventlog.ForeignMessageError) *Entry {
	f := &Foreign{Seq: alien.Seq, Size: alien.Size, Subject: alien.Subject, Reason: alien.Reason}
	return &Entry{Seq: alien.Seq, Time: alien.Time, Type: TypeForeign, Foreign: f,
		Summary: fmt.Sprintf("message %d: not written by turnlog (a NATS reply or another client's publish), ignored: %s (%d bytes on %s)",
			alien.Seq, quote(f.Reason), f.Size, quote(f.Subject))}
}
