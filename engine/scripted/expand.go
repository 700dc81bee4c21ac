package scripted

// This file holds the scripts' reply templates, compiled once when a
// script is parsed: a reply is then built without a regular expression per
// model call (the engine stands in for the model in `turnlog bench`, where
// its own cost counted against the log's).

import (
	"encoding/json"
	"strings"
)

// resultRef is where a tool's output goes in an after-tools reply.
const resultRef = "{{result}}"

// template is a reply with its references resolved into pieces.
type template []piece

// piece is literal text, a pattern group ($N; $Njson quotes it as a JSON
// string) or the tool's result.
type piece struct {
	text   string
	group  int // -1: literal text; -2: the tool's result
	asJSON bool
}

const (
	literal = -1
	result  = -2
)

// compileTemplate splits s at its references: $0 to $9, optionally
// followed by "json", and {{result}}.
func compileTemplate(s string) template {
	var t template
	lit := 0 // start of the literal text not yet in t
	flush := func(end int) {
		if end > lit {
			t = append(t, piece{text: s[lit:end], group: literal})
		}
	}
	for i := 0; i < len(s); {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			flush(i)
			p := piece{group: int(s[i+1] - '0')}
			i += 2
			if strings.HasPrefix(s[i:], "json") {
				p.asJSON = true
				i += len("json")
			}
			t = append(t, p)
			lit = i
		case strings.HasPrefix(s[i:], resultRef):
			flush(i)
			t = append(t, piece{group: result})
			i += len(resultRef)
			lit = i
		default:
			i++
		}
	}
	flush(len(s))
	return t
}

// expand fills in the pattern's groups and the tool's result. A group's
// or a result's own text is never read for references.
func (t template) expand(groups []string, toolResult string) string {
	if len(t) == 1 && t[0].group == literal {
		return t[0].text
	}
	var b strings.Builder
	for _, p := range t {
		switch {
		case p.group == literal:
			b.WriteString(p.text)
		case p.group == result:
			b.WriteString(toolResult)
		default:
			v := ""
			if p.group < len(groups) {
				v = groups[p.group]
			}
			if p.asJSON {
				q, _ := json.Marshal(v)
				b.Write(q)
			} else {
				b.WriteString(v)
			}
		}
	}
	return b.String()
}
