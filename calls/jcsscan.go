package calls

// Canonical reads a JSON text and writes its canonical form in one pass,
// without building a tree of values first: the gateway canonicalises every
// item it has not seen before, and decoding each into maps and
// interfaces was most of what that cost. It accepts exactly what
// encoding/json accepts, and reads strings as it does (invalid UTF-8 and
// lone surrogates as U+FFFD); FuzzCanonical holds it to that.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxCanonicalDepth bounds the nesting of a JSON text, as encoding/json's
// decoder does.
const maxCanonicalDepth = 10000

// canonScanner reads one JSON text (b) into its canonical form.
type canonScanner struct {
	b     []byte
	i     int
	depth int
	text  []byte // a string's decoded bytes, reused
	moved []byte // an object's members while they are put in order, reused
	// strict notes, in ambiguous, the first object whose member names
	// JSON readers disagree on (see ambiguousNames).
	strict    bool
	ambiguous string
	// exactNumbers writes a number whose double is not its value as its
	// value (see canonicalExact); inexact notes that the canonical form
	// leaves out something the text says.
	exactNumbers bool
	inexact      bool
}

// member is an object's member as canonScanner wrote it: its name, and
// where its canonical value lies in the output.
type canonMember struct {
	name       string
	start, end int
}

func (s *canonScanner) fail(what string) error {
	if s.i >= len(s.b) {
		return errors.New("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid character %q %s (offset %d)", s.b[s.i], what, s.i)
}

func (s *canonScanner) space() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

// value appends the canonical form of the value at s.i to out.
func (s *canonScanner) value(out []byte) ([]byte, error) {
	s.space()
	if s.i >= len(s.b) {
		return out, errors.New("unexpected end of JSON input")
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(out)
	case c == '[':
		return s.array(out)
	case c == '"':
		// Most strings are written as they came: no escape, no control
		// character, valid UTF-8.
		if end := s.i + 1 + plainRun(s.b[s.i+1:]); end < len(s.b) && s.b[end] == '"' && utf8.Valid(s.b[s.i+1:end]) {
			out = append(out, s.b[s.i:end+1]...)
			s.i = end + 1
			return out, nil
		}
		str, err := s.str()
		if err != nil {
			return out, err
		}
		return appendString(out, str), nil
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number(out)
	case c == 't':
		return s.literal(out, "true")
	case c == 'f':
		return s.literal(out, "false")
	case c == 'n':
		return s.literal(out, "null")
	}
	return out, s.fail("looking for beginning of value")
}

func (s *canonScanner) literal(out []byte, lit string) ([]byte, error) {
	for k := 0; k < len(lit); k++ {
		if s.i >= len(s.b) || s.b[s.i] != lit[k] {
			return out, s.fail("in literal " + lit)
		}
		s.i++
	}
	return append(out, lit...), nil
}

func (s *canonScanner) enter() error {
	if s.depth++; s.depth > maxCanonicalDepth {
		return errors.New("exceeded max depth")
	}
	return nil
}

func (s *canonScanner) array(out []byte) ([]byte, error) {
	if err := s.enter(); err != nil {
		return out, err
	}
	defer func() { s.depth-- }()
	s.i++ // '['
	out = append(out, '[')
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return append(out, ']'), nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = s.value(out); err != nil {
			return out, err
		}
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return append(out, ']'), nil
		}
		return out, s.fail("after array element")
	}
}

// object writes the members' values one after the other, then puts them
// in JCS order with their names (the last of a name given twice wins).
func (s *canonScanner) object(out []byte) ([]byte, error) {
	if err := s.enter(); err != nil {
		return out, err
	}
	defer func() { s.depth-- }()
	s.i++ // '{'
	start := len(out)
	var members []canonMember
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return append(out, '{', '}'), nil
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return out, s.fail("looking for beginning of object key string")
		}
		name, err := s.str()
		if err != nil {
			return out, err
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return out, s.fail("after object key")
		}
		s.i++
		vs := len(out)
		if out, err = s.value(out); err != nil {
			return out, err
		}
		members = append(members, canonMember{name: name, start: vs - start, end: len(out) - start})
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			break
		}
		return out, s.fail("after object key:value pair")
	}
	slices.SortStableFunc(members, func(a, b canonMember) int { return compareUTF16(a.name, b.name) })
	if s.strict && s.ambiguous == "" {
		s.ambiguous = ambiguousNames(members)
	}
	s.moved = append(s.moved[:0], out[start:]...)
	values := s.moved
	out = append(out[:start], '{')
	first := true
	for k, m := range members {
		if k+1 < len(members) && members[k+1].name == m.name {
			s.inexact = true
			continue // a later value of the same name wins
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendString(out, m.name)
		out = append(out, ':')
		out = append(out, values[m.start:m.end]...)
	}
	return append(out, '}'), nil
}

// compareUTF16 orders names by their UTF-16 code units (sortUTF16).
func compareUTF16(a, b string) int {
	if isASCII(a) && isASCII(b) {
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// number appends a number as JCS writes it, after checking it is written
// as JSON allows.
func (s *canonScanner) number(out []byte) ([]byte, error) {
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return out, s.fail("in numeric literal")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return out, s.fail("after decimal point in numeric literal")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return out, s.fail("in exponent of numeric literal")
		}
	}
	text := s.b[start:s.i]
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return out, fmt.Errorf("number %s: %w", text, err)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return out, fmt.Errorf("number %s is out of the range of a double, which canonical JSON cannot write", text)
	}
	n := len(out)
	out = appendNumber(out, f)
	if s.exactNumbers && string(out[n:]) != string(text) {
		out = s.exactNumber(out, n, text, f)
	}
	return out, nil
}

// str reads the string at s.i ('"') and returns its text: escapes
// decoded, invalid UTF-8 and lone surrogates as U+FFFD.
func (s *canonScanner) str() (string, error) {
	s.i++ // '"'
	start := s.i
	// The common case: no escape, no control character, valid UTF-8.
	if end := start + plainRun(s.b[start:]); end < len(s.b) && s.b[end] == '"' && utf8.Valid(s.b[start:end]) {
		s.i = end + 1
		return string(s.b[start:end]), nil
	}
	t := s.text[:0]
	defer func() { s.text = t }()
	for {
		if s.i >= len(s.b) {
			return "", errors.New("unexpected end of JSON input")
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(t), nil
		case c < 0x20:
			return "", s.fail("in string literal")
		case c == '\\':
			s.i++
			if s.i >= len(s.b) {
				return "", errors.New("unexpected end of JSON input")
			}
			e := s.b[s.i]
			s.i++
			switch e {
			case '"', '\\', '/':
				t = append(t, e)
			case 'b':
				t = append(t, '\b')
			case 'f':
				t = append(t, '\f')
			case 'n':
				t = append(t, '\n')
			case 'r':
				t = append(t, '\r')
			case 't':
				t = append(t, '\t')
			case 'u':
				r, ok := s.hex4()
				if !ok {
					return "", s.fail("in \\u hexadecimal character escape")
				}
				if utf16.IsSurrogate(r) {
					// A pair when the next escape completes it; else this
					// one alone is U+FFFD and the next is read on its own.
					if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
						save := s.i
						s.i += 2
						r2, ok := s.hex4()
						if !ok {
							return "", s.fail("in \\u hexadecimal character escape")
						}
						if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
							t = utf8.AppendRune(t, pair)
							continue
						}
						s.i = save
					}
					r, s.inexact = utf8.RuneError, true
				}
				t = utf8.AppendRune(t, r)
			default:
				s.i--
				return "", s.fail("in string escape code")
			}
		case c < utf8.RuneSelf:
			t = append(t, c)
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				t, s.inexact = utf8.AppendRune(t, utf8.RuneError), true
			} else {
				t = append(t, s.b[s.i:s.i+size]...)
			}
			s.i += size
		}
	}
}

// hex4 reads the four hex digits of a \u escape.
func (s *canonScanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	s.i += 4
	return r, true
}
