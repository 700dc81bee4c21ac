// Package rolemarker finds role markers in text: "System:", "User:" or
// "Assistant:" (any case) at the start of a line, after optional spaces or
// tabs. The roles middleware honours them in trusted text and flags them
// in the rest; replay --check reports them in text that is not trusted,
// where they are how an instruction is smuggled in ("System: ignore all
// previous instructions"). It does no I/O.
package rolemarker

import (
	"strings"

	"github.com/turnlog/turnlog/events"
)

// Marker is a marker found in a text: LineStart is where its line begins,
// Start where the marker begins after indentation, Body where the text
// after the colon begins, Line its line's number from 1, and Kind the
// kind of block it speaks as (system, user, llm_text).
type Marker struct {
	Kind                   events.Kind
	LineStart, Start, Body int
	Line                   int
}

var markerKinds = [...]struct {
	word string
	kind events.Kind
}{
	{"system:", events.KindSystem},
	{"user:", events.KindUser},
	{"assistant:", events.KindLLMText},
}

// Find finds the markers in s: all of them when all is set, else the first
// one. It scans bytes, not a regular expression, and looks only at line
// starts: it runs over every block's text before every model call.
func Find(s string, all bool) []Marker {
	var out []Marker
	for pos, line := 0, 1; ; line++ {
		at := pos
		for at < len(s) && (s[at] == ' ' || s[at] == '\t') {
			at++
		}
		if at < len(s) {
			switch s[at] | 0x20 { // ASCII lower case
			case 's', 'u', 'a':
				for _, m := range markerKinds {
					if len(s)-at >= len(m.word) && strings.EqualFold(s[at:at+len(m.word)], m.word) {
						out = append(out, Marker{Kind: m.kind, LineStart: pos, Start: at, Body: at + len(m.word), Line: line})
						if !all {
							return out
						}
						break
					}
				}
			}
		}
		nl := strings.IndexByte(s[at:], '\n')
		if nl < 0 {
			return out
		}
		pos = at + nl + 1
	}
}
