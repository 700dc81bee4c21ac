package template

// This file holds the lint: the constructs a template accepts silently
// (the language has no errors) but that are almost always typos.

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Warning codes, exactly as the HTTP API's "warnings" array spells them:
// scripts and the console may branch on them.
const (
	WarnUnknownType     = "unknown_type"     // [fiel:README.md]: the type is none of the catalog's
	WarnUnknownVariable = "unknown_variable" // [system:dat]: a fixed type with a name it does not have
	WarnUnmatchedIf     = "unmatched_if"     // [if ...] without its [endif]
	WarnUnmatchedElse   = "unmatched_else"   // [else] outside an [if], or a second one
	WarnUnmatchedEndif  = "unmatched_endif"  // [endif] without an open [if]
	WarnUnterminatedTag = "unterminated_tag" // [system:date or [if x:y with no ']' on its line
	WarnTooMany         = "too_many"         // the lint stopped at MaxWarnings
)

// MaxWarnings bounds what Lint reports, so a hostile or generated
// template cannot turn an answer into megabytes of warnings; the last
// warning then says how many more there were.
const MaxWarnings = 100

// Warning is one suspicious construct of a template: accepted, rendered
// by the language's rules (an unknown variable renders blank, an unmatched
// tag is literal text), but most likely not what its author meant. It
// exists so that whoever sets a template sees a typo before a
// conversation is recorded with it.
type Warning struct {
	// Code says what is suspicious: one of the Warn* constants.
	Code string `json:"code"`
	// Offset is the construct's byte offset in the template; Line and
	// Col (both from 1; Col counts characters) the same as an editor
	// shows it.
	Offset int `json:"offset"`
	Line   int `json:"line"`
	Col    int `json:"col"`
	// Text is the construct as written (for a tag without its ']', the
	// rest of its line).
	Text string `json:"text"`
	// Message says what is wrong and what renders instead, for a human.
	Message string `json:"message"`
}

// String is "line:col: message", as compilers print it.
func (w Warning) String() string { return fmt.Sprintf("%d:%d: %s", w.Line, w.Col, w.Message) }

// knownVariables is the catalog by type: the names of a fixed type, or
// nil for a type whose name is the user's (file:<path>).
func knownVariables() (types []string, names map[string][]string) {
	names = map[string][]string{}
	for _, v := range Catalog() {
		typ, name, _ := strings.Cut(v.Ref, ":")
		if _, seen := names[typ]; !seen {
			types = append(types, typ)
			names[typ] = nil
		}
		if !v.Dynamic {
			names[typ] = append(names[typ], name)
		}
	}
	return types, names
}

// Lint lists the suspicious constructs of src in order of position: a
// variable of an unknown type, an unknown name of a type whose names are
// fixed, an [if], [else] or [endif] left without its partner, and a tag
// opened but not closed on its line. It changes nothing about rendering:
// [Parse] reads src exactly as before. Like Parse it never fails, uses no
// recursion and takes time linear in len(src).
func Lint(src string) []Warning {
	types, names := knownVariables()
	var ws []Warning
	add := func(code string, at int, text, msg string) {
		ws = append(ws, Warning{Code: code, Offset: at, Text: text, Message: msg})
	}
	checkRef := func(at int, text string, ref Ref) {
		fixed, known := names[ref.Type]
		switch {
		case !known:
			add(WarnUnknownType, at, text, fmt.Sprintf("unknown variable type %q in %s (known types: %s); it renders as nothing",
				ref.Type, text, strings.Join(types, ", ")))
		case fixed != nil && !contains(fixed, ref.Name):
			add(WarnUnknownVariable, at, text, fmt.Sprintf("unknown variable %s in %s (the %s variables are %s); it renders as nothing",
				ref, text, ref.Type, refList(ref.Type, fixed)))
		}
	}

	nodes := lex(src)
	before := make([]kind, len(nodes))
	for i := range nodes {
		before[i] = nodes[i].kind
	}
	match(nodes)
	for i, n := range nodes {
		switch before[i] {
		case kindVar:
			checkRef(n.at, n.text, n.ref)
		case kindIf:
			checkRef(n.at, n.text, n.ref)
			if n.kind == kindText {
				add(WarnUnmatchedIf, n.at, n.text, fmt.Sprintf("%s has no matching [endif]; it is kept as literal text", n.text))
			}
		case kindElse:
			if n.kind == kindText {
				add(WarnUnmatchedElse, n.at, n.text, "[else] belongs to no [if] (outside one, a second [else], or its [if] has no [endif]); it is kept as literal text")
			}
		case kindEndif:
			if n.kind == kindText {
				add(WarnUnmatchedEndif, n.at, n.text, "[endif] closes no [if]; it is kept as literal text")
			}
		}
	}
	lintUnterminated(src, add)

	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Offset < ws[j].Offset })
	if len(ws) > MaxWarnings {
		more := len(ws) - (MaxWarnings - 1)
		ws = append(ws[:MaxWarnings-1], Warning{Code: WarnTooMany, Offset: ws[MaxWarnings-1].Offset,
			Message: fmt.Sprintf("and %d more warnings from here on; fix the ones above first", more)})
	}
	positions(src, ws)
	return ws
}

// lintUnterminated finds tags that a ']' never closes on their line: a
// '[' followed by what starts a tag ("if ", "else", "endif" or a type and
// ':'), with no ']' after it before the line ends. The language keeps
// them as literal text.
func lintUnterminated(src string, add func(code string, at int, text, msg string)) {
	for start := 0; start < len(src); {
		end := strings.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start
		}
		line := src[start:end]
		from := strings.LastIndexByte(line, ']') + 1
		for {
			j := strings.IndexByte(line[from:], '[')
			if j < 0 {
				break
			}
			at := from + j
			if startsTag(line[at+1:]) {
				text := strings.TrimRight(line[at:], " \t\r")
				add(WarnUnterminatedTag, start+at, text, fmt.Sprintf("%s is not closed by ']' on its line; it is kept as literal text", text))
			}
			from = at + 1
		}
		start = end + 1
	}
}

// startsTag reports whether s (what follows a '[') begins as a tag does.
func startsTag(s string) bool {
	for _, kw := range []string{"else", "endif"} {
		if strings.HasPrefix(s, kw) {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(s, "if"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		return true
	}
	i := 0
	for i < len(s) && 'a' <= s[i] && s[i] <= 'z' {
		i++
	}
	return i > 0 && i < len(s) && s[i] == ':'
}

// positions fills Line and Col from Offset; ws is sorted by Offset, so
// one pass over src serves them all.
func positions(src string, ws []Warning) {
	line, lineStart, at := 1, 0, 0
	for i := range ws {
		for at < ws[i].Offset && at < len(src) {
			if src[at] == '\n' {
				line++
				lineStart = at + 1
			}
			at++
		}
		ws[i].Line = line
		ws[i].Col = utf8.RuneCountInString(src[lineStart:min(ws[i].Offset, len(src))]) + 1
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// refList writes names of typ as tags: [system:time], [system:date].
func refList(typ string, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "[" + typ + ":" + n + "]"
	}
	return strings.Join(out, ", ")
}
