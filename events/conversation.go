package events

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxConversationIDLen bounds conversation IDs so that a subject, a KV key
// and a log line built from one stay small.
const MaxConversationIDLen = 128

// ErrInvalidConversationID is returned for conversation IDs that could widen
// or break a NATS subject (a '.', '*' or '>'), or are empty, too long or
// contain characters outside [A-Za-z0-9_-].
var ErrInvalidConversationID = errors.New("invalid conversation ID")

// ValidateConversationID checks that id can be used as the last token of a
// subject without widening it: only letters, digits, '-' and '_', 1 to
// MaxConversationIDLen bytes. The error names the offending character and
// says what is allowed.
func ValidateConversationID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty; use 1 to %d letters, digits, '-' or '_'", ErrInvalidConversationID, MaxConversationIDLen)
	}
	if len(id) > MaxConversationIDLen {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidConversationID, len(id), MaxConversationIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if conversationIDByte[c] {
			continue
		}
		what := fmt.Sprintf("%q", c)
		switch c {
		case '.', '*', '>':
			what = fmt.Sprintf("'%c', which NATS subjects forbid", c)
		}
		if c < 0x20 || c == 0x7f {
			what = fmt.Sprintf("control character 0x%02x", c)
		}
		if c >= utf8.RuneSelf {
			// A character of several bytes: named whole, not by its
			// first byte read as a character of its own.
			if r, size := utf8.DecodeRuneInString(id[i:]); r != utf8.RuneError || size > 1 {
				what = fmt.Sprintf("%q (%U)", r, r)
			} else {
				what = fmt.Sprintf("byte 0x%02x, which is not UTF-8,", c)
			}
		}
		return fmt.Errorf("%w: %q contains %s at byte %d; use letters, digits, '-' or '_'", ErrInvalidConversationID, truncate(id, 40), what, i)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// conversationIDByte says which bytes a conversation ID may hold: a table,
// because every event applied or decoded checks its conversation's ID.
var conversationIDByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	return t
}()

// CommandArg is conversation ID id as the last argument of a turnlog
// command printed for a person to run: after "--" when it begins with
// '-', which a command would otherwise read as a flag (an ID may begin
// with one; an app names its conversations).
func CommandArg(id string) string {
	if strings.HasPrefix(id, "-") {
		return "-- " + id
	}
	return id
}
