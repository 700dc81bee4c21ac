package template

import (
	"strings"
)

// Ref names one variable: Type is the namespace that decides how it is
// resolved ("system", "git", "file", ...) and Name the variable inside it.
// It is comparable, so it can key maps and be deduplicated.
type Ref struct {
	Type string
	Name string
}

// String returns the ref as written inside brackets, "type:name"; it is also
// the key used by [Values]. The type never contains ':', so the first ':'
// separates the two parts even when the name contains ':' itself.
func (r Ref) String() string { return r.Type + ":" + r.Name }

// Lookup is what a template reads its variables from. It exists so the
// renderer stays pure: resolving values (clock, git, files) happens before
// rendering, and tests can pass a plain map. ok is false when the variable
// does not exist, which renders like an empty value but makes [if] false.
type Lookup interface {
	Lookup(ref Ref) (value string, ok bool)
}

// Values is the simplest [Lookup]: a map keyed by [Ref.String]
// ("type:name"). It is also what [Resolve] and [RenderWith] return, so the
// values used for a prompt can be recorded and rendered again later.
type Values map[string]string

// Lookup returns the value stored under ref.String().
func (v Values) Lookup(ref Ref) (string, bool) {
	s, ok := v[ref.String()]
	return s, ok
}

// Template is a parsed template: parse once with [Parse], render many times
// with [Template.Render]. A Template is immutable and safe for concurrent
// use.
type Template struct {
	nodes []node
	refs  []Ref
	size  int // len of the source, to size the output buffer
}

type kind uint8

const (
	kindText  kind = iota // literal text, including tags that turned out unmatched
	kindVar               // [type:name]
	kindIf                // [if type:name] or [if !type:name]
	kindElse              // [else] bound to a matched [if]
	kindEndif             // [endif] closing a matched [if]
)

// node is one lexical piece of the template. Control flow is flattened into
// jumps (next) so that rendering is a single loop with no recursion and no
// stack, whatever the nesting depth.
type node struct {
	kind   kind
	text   string // kindText: the text; tags: their source, used if they end up literal
	at     int    // byte offset of text in the source, for Lint's positions
	ref    Ref
	negate bool
	// next is where rendering continues: for kindIf when the condition is
	// false (just after its [else], or just after its [endif]); for kindElse
	// (reached only at the end of a true branch) just after its [endif].
	next int
}

// Parse parses src. It never fails: anything that is not a well-formed tag,
// including an [if] without its [endif] and a stray [else] or [endif], is
// kept as literal text (see the package documentation). Parsing is linear in
// len(src) and uses no recursion, so hostile input (deep nesting, many
// brackets) cannot exhaust the stack or take quadratic time.
func Parse(src string) *Template {
	nodes := lex(src)
	match(nodes)
	t := &Template{nodes: nodes, size: len(src)}
	seen := make(map[Ref]bool)
	for _, n := range nodes {
		if n.kind != kindVar && n.kind != kindIf {
			continue
		}
		if !seen[n.ref] {
			seen[n.ref] = true
			t.refs = append(t.refs, n.ref)
		}
	}
	return t
}

// Variables returns every variable the template refers to, in [type:name]
// and in [if] conditions, in order of first appearance and without
// duplicates. It exists so a caller resolves only what the template needs
// (reading files and running git is not free). The slice is a copy.
func (t *Template) Variables() []Ref {
	out := make([]Ref, len(t.refs))
	copy(out, t.refs)
	return out
}

// Render renders the template with vars (nil means no variable exists).
//
// ok is false when the result is empty or only whitespace: the template
// means "no system prompt at all", and prompt is then "". When ok is true,
// prompt is the rendered text exactly, surrounding whitespace included.
//
// The output is never longer than the template plus, for each [type:name]
// occurrence, the length of its value: every piece of source text is written
// at most once and each variable occurrence at most once.
func (t *Template) Render(vars Lookup) (prompt string, ok bool) {
	prompt, ok, _ = t.render(vars, -1, nil)
	return prompt, ok
}

// RenderLimit is [Template.Render] with the output capped at max bytes: it
// stops as soon as the next piece would take the output past max and
// returns a [*LimitError] (wrapping [ErrTooLarge]) naming the cap and the
// variable being written, so memory stays within max whatever the
// template. A negative max means no cap.
func (t *Template) RenderLimit(vars Lookup, max int64) (prompt string, ok bool, err error) {
	return t.render(vars, max, nil)
}

// Span is the byte range [Start, End) of a rendered prompt that the value
// of Ref filled in. Everything outside the spans is the template's own
// text: what the operator wrote.
type Span struct {
	Start, End int
	Ref        Ref
}

// RenderSpans is Render, and also says where in prompt each variable's
// value went: one span per non-empty value substituted, in order. It
// exists so that what honours trusted text (role markers) can tell the
// operator's words from the files, git output and request data a template
// pulls in. spans is nil when ok is false.
func (t *Template) RenderSpans(vars Lookup) (prompt string, spans []Span, ok bool) {
	prompt, spans, ok, _ = t.RenderSpansLimit(vars, -1)
	return prompt, spans, ok
}

// RenderSpansLimit is [Template.RenderSpans] with the output capped at max
// bytes, as [Template.RenderLimit]. At the cap nothing is returned (the
// prompt is never sent cut), so no span ever needs clipping.
func (t *Template) RenderSpansLimit(vars Lookup, max int64) (prompt string, spans []Span, ok bool, err error) {
	prompt, ok, err = t.render(vars, max, &spans)
	if err != nil || !ok {
		return "", nil, false, err
	}
	return prompt, spans, true, nil
}

// render renders with vars, stopping at max bytes (negative: no cap), and
// when spans is not nil appends the span of every variable value written.
func (t *Template) render(vars Lookup, max int64, spans *[]Span) (string, bool, error) {
	var b strings.Builder
	// write adds s unless that takes the output past max; at is the tag
	// being written, for the error ("" for literal text).
	write := func(s, at string) error {
		if max >= 0 && int64(b.Len())+int64(len(s)) > max {
			return &LimitError{Prompt: true, Limit: max, At: at}
		}
		b.WriteString(s)
		return nil
	}
	if max >= 0 {
		b.Grow(int(min(int64(t.size), max)))
	} else {
		b.Grow(t.size)
	}
	lookup := func(ref Ref) (string, bool) {
		if vars == nil {
			return "", false
		}
		return vars.Lookup(ref)
	}
	for i := 0; i < len(t.nodes); {
		n := &t.nodes[i]
		switch n.kind {
		case kindText:
			if err := write(n.text, ""); err != nil {
				return "", false, err
			}
			i++
		case kindVar:
			if v, ok := lookup(n.ref); ok {
				start := b.Len()
				if err := write(v, n.text); err != nil {
					return "", false, err
				}
				if spans != nil && v != "" {
					*spans = append(*spans, Span{Start: start, End: start + len(v), Ref: n.ref})
				}
			}
			i++
		case kindIf:
			v, ok := lookup(n.ref)
			if (ok && strings.TrimSpace(v) != "") != n.negate {
				i++
			} else {
				i = n.next
			}
		case kindElse:
			i = n.next
		default: // kindEndif
			i++
		}
	}
	out := b.String()
	if strings.TrimSpace(out) == "" {
		return "", false, nil
	}
	return out, true, nil
}

// lex splits src into text and tag nodes. A tag runs from '[' to the first
// following ']' on the same line. Its content can contain neither ']' nor a
// newline, so every '[' between a '[' and that ']' shares the same closing
// position: it is found once and cached, which keeps lexing linear even on
// input such as "[[[[...]".
func lex(src string) []node {
	var nodes []node
	textStart := 0
	closeAt := -1 // position of the next ']' or '\n' at or after i, when > i
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '[')
		if j < 0 {
			break
		}
		i += j
		if closeAt <= i {
			k := strings.IndexAny(src[i:], "]\n")
			if k < 0 {
				break // no ']' anywhere after: no more tags
			}
			closeAt = i + k
		}
		if src[closeAt] == '\n' {
			i = closeAt + 1 // no tag can span the newline
			continue
		}
		n, ok := parseTag(src[i+1 : closeAt])
		if !ok {
			i++ // the '[' is literal; a later '[' may still open a tag
			continue
		}
		if textStart < i {
			nodes = append(nodes, node{kind: kindText, text: src[textStart:i], at: textStart})
		}
		n.text, n.at = src[i:closeAt+1], i
		nodes = append(nodes, n)
		i = closeAt + 1
		textStart = i
	}
	if textStart < len(src) {
		nodes = append(nodes, node{kind: kindText, text: src[textStart:], at: textStart})
	}
	return nodes
}

// parseTag recognises the content between '[' and ']'. The work it does is
// bounded by the distance to the next '[' unless it succeeds (the type
// stops at the first character outside a-z), which keeps lex linear.
func parseTag(content string) (node, bool) {
	switch content {
	case "else":
		return node{kind: kindElse}, true
	case "endif":
		return node{kind: kindEndif}, true
	}
	if rest, ok := strings.CutPrefix(content, "if"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		rest = strings.TrimLeft(rest, " \t")
		negate := false
		if r, ok := strings.CutPrefix(rest, "!"); ok {
			negate, rest = true, r
		}
		ref, ok := parseRef(rest)
		if !ok {
			return node{}, false
		}
		return node{kind: kindIf, ref: ref, negate: negate}, true
	}
	ref, ok := parseRef(content)
	if !ok {
		return node{}, false
	}
	return node{kind: kindVar, ref: ref}, true
}

// parseRef parses "type:name": type is [a-z]+, name is non-empty and
// contains neither ']' nor a newline.
func parseRef(s string) (Ref, bool) {
	i := 0
	for i < len(s) && 'a' <= s[i] && s[i] <= 'z' {
		i++
	}
	if i == 0 || i >= len(s) || s[i] != ':' {
		return Ref{}, false
	}
	name := s[i+1:]
	if name == "" || strings.ContainsAny(name, "]\n") {
		return Ref{}, false
	}
	return Ref{Type: s[:i], Name: name}, true
}

// match pairs [if], [else] and [endif] with an explicit stack, innermost
// first, and turns every tag left without a partner into literal text:
//   - an [endif] with no open [if] is literal;
//   - an [else] binds to the innermost open [if]; if that [if] already has
//     an [else], or none is open, it is literal;
//   - an [if] still open at the end is literal, and so is the [else] bound
//     to it. What follows such a tag is rendered normally.
func match(nodes []node) {
	type open struct{ ifAt, elseAt int }
	var stack []open
	literal := func(i int) { nodes[i].kind = kindText }
	for i := range nodes {
		switch nodes[i].kind {
		case kindIf:
			stack = append(stack, open{ifAt: i, elseAt: -1})
		case kindElse:
			if len(stack) == 0 || stack[len(stack)-1].elseAt >= 0 {
				literal(i)
				continue
			}
			stack[len(stack)-1].elseAt = i
		case kindEndif:
			if len(stack) == 0 {
				literal(i)
				continue
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.elseAt >= 0 {
				nodes[top.ifAt].next = top.elseAt + 1
				nodes[top.elseAt].next = i + 1
			} else {
				nodes[top.ifAt].next = i + 1
			}
		}
	}
	for _, o := range stack {
		literal(o.ifAt)
		if o.elseAt >= 0 {
			literal(o.elseAt)
		}
	}
}
