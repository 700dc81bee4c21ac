package replay

import (
	"fmt"
	"io"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
)

// Marks that bracket variable content in a prompt written for a person:
// ⟦file:AGENTS.md⟧ opens the value of file:AGENTS.md and ⟦/⟧ closes it.
// The same characters in the prompt's text are escaped (\u27e6, \u27e7),
// so a value cannot fake the end of its own span.
const (
	markOpen  = "⟦"
	markClose = "⟧"
)

var escapeMarks = strings.NewReplacer(markOpen, `\u27e6`, markClose, `\u27e7`)

// writePromptText writes a prompt line by line after indent, so that an
// auditor sees which words the operator wrote: a line of the operator's
// text only starts with "|", a line holding variable content (untrusted,
// see events.Block.Untrusted) with "!", and the content itself is
// bracketed ⟦var⟧ … ⟦/⟧ where it starts and ends. Control characters are
// escaped as everywhere in replay's output.
func writePromptText(w io.Writer, text string, spans []events.Span, indent string) {
	next := 0 // the first span not yet closed
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		var line strings.Builder
		untrusted := false
		at := start
		for next < len(spans) && spans[next].Start <= end {
			s := spans[next]
			if s.Start >= at { // it starts on this line (or at its line break)
				line.WriteString(lineText(text[at:s.Start]))
				line.WriteString(markOpen + escapeMarks.Replace(safe(s.Var)) + markClose)
				at = s.Start
			}
			untrusted = true
			if s.End > end {
				break // continues on the next line
			}
			line.WriteString(lineText(text[at:s.End]))
			line.WriteString(markOpen + "/" + markClose)
			at = s.End
			next++
		}
		line.WriteString(lineText(text[at:end]))
		gutter := "|"
		if untrusted {
			gutter = "!"
		}
		fmt.Fprintf(w, "%s  %s %s\n", indent, gutter, line.String())
		start = end + 1
	}
}

// lineText is a piece of one line of a prompt as writePromptText prints it.
func lineText(s string) string { return escapeMarks.Replace(safe(s)) }

// spanNote says how many variable spans a prompt has, for the line that
// introduces it; "" when it has none.
func spanNote(spans []events.Span) string {
	if len(spans) == 0 {
		return ""
	}
	n := 0
	for _, s := range spans {
		n += s.End - s.Start
	}
	return plural.Count(n, "byte") + " from variables (untrusted, marked ⟦var⟧…⟦/⟧ and \"!\" below)"
}
