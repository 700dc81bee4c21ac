package replay

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
)

// ANSI colours, used only when WriteText is asked for colour.
const (
	ansiReset   = "\x1b[0m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
)

// previewRunes is how much of a block's text a one-line preview shows.
const previewRunes = 60

// WriteText writes r for a person, one line per finding:
//
//	> moved    system      01J9...  A[0] -> B[3]  "You are a helpful assistant."
//	~ changed  user        01J9...  A[2] -> B[2]  [text trust]  "hello world"
//	    --- A/01J9...
//	    ...
//	+ added    llm_text    01J9...  B[4]  "Sure⏎here it is"
//	- removed  tool_call   01J9...  A[5]  "get_time({})"
//
// then the system prompt change (*), data changes, the duplicates and
// violations sections and a summary line. Texts are quoted one-line
// previews of about 60 characters with newlines shown as ⏎, and every
// control character coming from a Turn is escaped, so untrusted text cannot
// drive the terminal. ANSI colour (green added, red removed, yellow
// changed, cyan moved, magenta violations) is written only when color is
// true. The only errors are w's.
func (r Result) WriteText(w io.Writer, color bool) error {
	p := &printer{w: bufio.NewWriter(w), color: color}
	for i := range r.Changes {
		p.change(&r.Changes[i])
	}
	if r.SystemPrompt != nil {
		p.systemPrompt(r.SystemPrompt)
	}
	for _, d := range r.Data {
		p.keyChange("", "data", d)
	}
	if len(r.Duplicates) > 0 {
		p.line("", "duplicates:")
		for _, d := range r.Duplicates {
			at := make([]string, len(d.Indexes))
			for k, i := range d.Indexes {
				at[k] = pos(d.Side, i)
			}
			p.line("", fmt.Sprintf("  %s by %-7s  %-11s  %s  ids %s  %s", d.Side, d.By, d.Kind,
				strings.Join(at, ", "), safe(strings.Join(d.IDs, ", ")), preview(d.Block)))
		}
	}
	if len(r.Violations) > 0 {
		p.line("", "violations:")
		for _, v := range r.Violations {
			p.line(ansiMagenta, fmt.Sprintf("  %s  %-11s  %s  %s: %s", pos(v.Side, v.Index), v.Kind,
				safe(v.ID), v.Rule, safe(v.Message)))
		}
	}
	p.line("", r.summary())
	if p.err != nil {
		return p.err
	}
	return p.w.Flush()
}

// printer writes lines and keeps the first error, as bufio.Writer does.
type printer struct {
	w     *bufio.Writer
	color bool
	err   error
}

func (p *printer) line(color, s string) {
	if p.err != nil {
		return
	}
	if p.color && color != "" {
		_, p.err = p.w.WriteString(color + s + ansiReset + "\n")
		return
	}
	_, p.err = p.w.WriteString(s + "\n")
}

var opStyle = map[Op]struct{ sym, color string }{
	OpAdded:   {"+", ansiGreen},
	OpRemoved: {"-", ansiRed},
	OpChanged: {"~", ansiYellow},
	OpMoved:   {">", ansiCyan},
}

func (p *printer) change(c *Change) {
	st := opStyle[c.Op]
	var where string
	switch c.Op {
	case OpAdded:
		where = pos(SideB, c.ToIndex)
	case OpRemoved:
		where = pos(SideA, c.FromIndex)
	default:
		where = pos(SideA, c.FromIndex) + " -> " + pos(SideB, c.ToIndex)
	}
	id := safe(c.ID)
	if c.FromID != "" {
		id += " (A: " + safe(c.FromID) + ")"
	}
	s := fmt.Sprintf("%s %-8s %-11s %s  %s", st.sym, c.Op, c.Kind, id, where)
	if len(c.Fields) > 0 {
		s += "  [" + strings.Join(c.Fields, " ") + "]"
	}
	p.line(st.color, s+"  "+preview(c.Block))
	for _, m := range c.Meta {
		p.keyChange("    ", "meta", m)
	}
	p.diff(c.TextDiff)
}

func (p *printer) systemPrompt(c *SystemPromptChange) {
	s := "* system prompt [" + strings.Join(c.Fields, " ") + "]"
	switch {
	case c.FromIndex < 0:
		s += "  " + safe(c.ToID) + " " + pos(SideB, c.ToIndex)
	case c.ToIndex < 0:
		s += "  " + safe(c.FromID) + " " + pos(SideA, c.FromIndex)
	default:
		s += "  " + safe(c.FromID) + " " + pos(SideA, c.FromIndex) + " -> " + safe(c.ToID) + " " + pos(SideB, c.ToIndex)
	}
	p.line(ansiYellow, s)
	p.diff(c.TextDiff)
}

func (p *printer) keyChange(indent, what string, k KeyChange) {
	st := opStyle[k.Op]
	key := strconv.Quote(k.Key)
	var s string
	switch k.Op {
	case OpAdded:
		s = key + " = " + quote(k.To)
	case OpRemoved:
		s = key + " (was " + quote(k.From) + ")"
	default:
		s = key + " " + quote(k.From) + " -> " + quote(k.To)
	}
	p.line(st.color, fmt.Sprintf("%s%s %-8s %-11s %s", indent, st.sym, k.Op, what, s))
}

// diff writes a unified diff indented under its change, coloured by line.
func (p *printer) diff(d string) {
	for l := range strings.Lines(d) {
		l = strings.TrimSuffix(l, "\n")
		color := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			color = ansiGreen
		case strings.HasPrefix(l, "-"):
			color = ansiRed
		case strings.HasPrefix(l, "@@"):
			color = ansiCyan
		}
		p.line(color, "    "+safe(l))
	}
}

func (r Result) summary() string {
	if r.Equal() {
		s := "equal"
		if n := r.MatchedByContent; n > 0 {
			s += fmt.Sprintf(" (%s matched by content: IDs differ)", plural.Count(n, "block"))
		}
		return s + findings(r)
	}
	count := map[Op]int{}
	for _, c := range r.Changes {
		count[c.Op]++
	}
	var parts []string
	for _, op := range []Op{OpMoved, OpChanged, OpAdded, OpRemoved} {
		if count[op] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[op], op))
		}
	}
	s := "different: " + plural.Count(len(r.Changes), "block change")
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if r.SystemPrompt != nil {
		s += ", system prompt changed"
	}
	if len(r.Data) > 0 {
		s += ", " + plural.Count(len(r.Data), "data change")
	}
	return s + findings(r)
}

func findings(r Result) string {
	if len(r.Duplicates) == 0 && len(r.Violations) == 0 {
		return ""
	}
	return "; " + plural.Count(len(r.Duplicates), "duplicate") + ", " + plural.Count(len(r.Violations), "violation")
}

func pos(s Side, i int) string { return string(s) + "[" + strconv.Itoa(i) + "]" }

// preview is a block as one quoted line for listings: its text, or for a
// tool call without text `tool(arguments)`, cut to about 60 characters with
// newlines shown as ⏎ and control characters escaped.
func preview(b events.Block) string {
	s := b.Text
	switch {
	case s != "":
	case b.ToolName != "" || b.Arguments != "":
		s = b.ToolName + "(" + b.Arguments + ")"
	case b.Encrypted != "":
		return "(encrypted)"
	}
	return quote(s)
}

// quote cuts s to one line of about previewRunes runes and quotes it;
// strconv.Quote escapes every control character, ANSI escapes included.
func quote(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\n", "⏎")
	if utf8.RuneCountInString(s) > previewRunes {
		n := 0
		for i := range s {
			if n == previewRunes {
				s = s[:i] + "…"
				break
			}
			n++
		}
	}
	return strconv.Quote(s)
}

// safe escapes control characters (ANSI escapes included) and invalid
// UTF-8 in text printed unquoted, such as IDs and diff lines, which may
// come from untrusted exports.
func safe(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is already in b
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch {
		case r == utf8.RuneError && n == 1:
			esc = fmt.Sprintf(`\x%02x`, s[i])
		case r != '\t' && unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			esc = q[1 : len(q)-1]
		}
		if esc != "" {
			b.WriteString(s[last:i])
			b.WriteString(esc)
			last = i + n
		}
		i += n
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
