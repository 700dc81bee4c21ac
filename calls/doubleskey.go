package calls

// This file holds how a tool call the model wrote is recognised when an
// app sends it back read as doubles: an app that parses the model's
// arguments with JavaScript's JSON.parse (or Python's float, Go's
// float64) and writes them again (JSON.stringify) sends an integer past
// 2^53 as its double ({"id": 1234567890123456789} back as
// {"id":1234567890123456800}). That is the model's call written by a
// double reader, not an edit; another integer with the same double
// ({"id":1234567890123456788}) is an edit, since that is not how any
// reader writes the model's text back. So the recognition goes one way,
// from the model's arguments to what is sent back, and is not a key
// (argumentsKey) both sides share.

import (
	"unicode/utf8"

	"github.com/turnlog/turnlog/events"
)

// doublesKey is a tool call's arguments as a reader that reads numbers
// as doubles and keeps a name's last value writes them back: their
// canonical form (Canonical), when it differs from argumentsKey (the
// arguments say something their doubles do not); "" otherwise, or when
// they are not JSON.
func doublesKey(args string) string {
	if !mayLoseToDoubles(args) {
		return ""
	}
	c, err := Canonical([]byte(args))
	if err != nil || string(c) == argumentsKey(args) {
		return ""
	}
	return string(c)
}

// readAsDoubles reports whether sent, a tool call's arguments sent back,
// are model's, the arguments the model wrote, as a double reader writes
// them back (doublesKey).
func readAsDoubles(model, sent string) bool {
	d := doublesKey(model)
	return d != "" && argumentsKey(sent) == d
}

// DoublesKey returns the content key (Key) of b, the model's tool call,
// as an app that reads its arguments as doubles sends it back (see
// doublesKey), and false when that is its Key (b is no tool call, or its
// arguments say nothing a double leaves out). An input block whose Key is
// it is b sent back, not edited.
func DoublesKey(b *events.Block) ([32]byte, bool) {
	if b.Kind != events.KindToolCall {
		return [32]byte{}, false
	}
	d := doublesKey(b.Arguments)
	if d == "" {
		return [32]byte{}, false
	}
	c := *b
	c.Arguments = d
	return Key(&c), true
}

// doublesState returns the key of the state blocks hold with the tool
// calls of its last output (the model's own text, the rest was sent by
// the app as it writes it) read as doubles (DoublesKey), for a state
// where that differs: what an app that reads them so continues. chain is
// ScopedChain(scope, blocks).
func doublesState(scope string, blocks []events.Block, chain [][32]byte) (string, bool) {
	start := len(blocks)
	for start > 0 && ModelOutput(blocks[start-1].Kind) {
		start--
	}
	if start == len(blocks) || len(chain) != len(blocks) {
		return "", false
	}
	prev, differs := scopeSeed(scope), false
	if start > 0 {
		prev = chain[start-1]
	}
	for i := start; i < len(blocks); i++ {
		k, ok := DoublesKey(&blocks[i])
		if !ok && !differs {
			prev = chain[i]
			continue
		}
		if !ok {
			k = Key(&blocks[i])
		}
		differs = true
		prev = link(prev, k)
	}
	if !differs {
		return "", false
	}
	return stateKey(prev), true
}

// mayLoseToDoubles reports, in one pass over args and without reading
// them as JSON, whether their doubles may leave out something they say
// (doublesKey): a number of 16 digits or more, or with an exponent (a
// double holds 15 digits of any decimal exactly), an escaped surrogate,
// or invalid UTF-8. It keeps Canonical off the path of each recorded
// call whose tool calls say nothing of the kind, nearly all: digits and
// letters inside strings (a UUID, a hex digest) are no number. A name
// given twice is not looked for: a model that writes one is read by its
// text.
func mayLoseToDoubles(args string) bool {
	digits, ascii, quoted := 0, true, false
	for i := 0; i < len(args); i++ {
		switch c := args[i]; {
		case c >= 0x80:
			ascii = false
		case quoted:
			switch {
			case c == '"':
				quoted = false
			case c == '\\' && escapedSurrogate(args[i+1:]):
				return true
			case c == '\\':
				i++ // the escaped character, which may be a quote
			}
		case c == '"':
			quoted, digits = true, 0
		case c >= '0' && c <= '9':
			if digits++; digits >= 16 {
				return true
			}
		case c == '.':
		case (c == 'e' || c == 'E') && digits > 0:
			return true
		default:
			digits = 0
		}
	}
	return !ascii && !utf8.ValidString(args)
}

// escapedSurrogate reports whether s, what follows a backslash in a JSON
// string, begins with the escape of a UTF-16 surrogate (u followed by
// D800 to DFFF).
func escapedSurrogate(s string) bool {
	if len(s) < 3 || s[0] != 'u' || s[1]|0x20 != 'd' {
		return false
	}
	d := s[2] | 0x20
	return d >= '8' && d <= '9' || d >= 'a' && d <= 'f'
}
