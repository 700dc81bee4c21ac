package cli

import (
	"strings"
	"unicode"
)

// terminalText is s without the control characters that start, end or
// take part in a terminal's control sequences (ESC, BEL, the one-byte
// CSI, ...); white space (newlines, tabs) stays. Text a user, a model or a
// provider wrote is printed through it: it must not drive the terminal of
// whoever reads it (an escape sequence can retitle the window, hide or
// rewrite what is shown). What is left of a sequence prints as plain text.
// A carriage return is dropped too, a line's CRLF ending read as LF: alone
// it takes the cursor back over what the line showed ("rm -rf ~ \rls"
// shows "ls -rf ~ ").
func terminalText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		if r == '\r' || unicode.IsControl(r) && !unicode.IsSpace(r) || r == 0x9b {
			return -1
		}
		return r
	}, s)
}
