package replay

import "github.com/turnlog/turnlog/events"

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
