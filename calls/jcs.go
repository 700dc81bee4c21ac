package calls

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Canonical returns the canonical form of a JSON text, as RFC 8785 (the
// JSON Canonicalization Scheme, JCS) defines it: no white space, object
// members sorted by the UTF-16 code units of their names, strings with the
// shortest escapes (only '"', '\\' and control characters escaped,
// everything else as UTF-8), numbers as ECMAScript writes an IEEE 754
// double. Two JSON texts that mean the same have the same canonical form,
// whatever their spacing, member order or escapes: the input hash of a call
// is the SHA-256 of its canonical form, which replay --verify renders again
// from the log.
//
// Limits, as in JCS: numbers are read as doubles, so integers past 2^53
// lose their last digits in the canonical form (never in what is
// forwarded), and a number past a double's range is refused wherever it
// is, even as the value of a name given again later; a name that occurs
// twice in one object keeps its last value; invalid UTF-8 reads as U+FFFD.
func Canonical(raw []byte) ([]byte, error) {
	out, _, err := canonical(raw, false)
	return out, err
}

// canonical is Canonical that, when strict, also says the first object
// whose member names readers disagree on (ambiguousNames).
func canonical(raw []byte, strict bool) (out []byte, ambiguous string, err error) {
	s := canonScanner{b: raw, strict: strict}
	out, err = s.value(make([]byte, 0, len(raw)))
	if err != nil {
		return nil, "", fmt.Errorf("not JSON: %w", err)
	}
	if s.space(); s.i != len(s.b) {
		return nil, "", errors.New("not JSON: more than one value, or text after the value")
	}
	return out, s.ambiguous, nil
}

// sortUTF16 sorts names by their UTF-16 code units, as JCS orders object
// members (it differs from byte order only past U+FFFF against
// U+E000..U+FFFF).
func sortUTF16(keys []string) { slices.SortFunc(keys, compareUTF16) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// appendString writes s as a JCS string. Runs of bytes that need no
// escape are copied at once: the strings are whole messages.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		i += plainRun(s[i:])
		if i == len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		start = i + 1
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendNumber writes f as ECMAScript's Number.prototype.toString does,
// which is what JCS prescribes.
func appendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // -0 too
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// Shortest round-trip digits and the exponent: d.ddde±x.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}

// plainRun returns the length of the run at the start of s of bytes a
// JSON string holds as they are: no '"', no '\\', no control character.
// It tests eight bytes at a time: a string's text is most of a request's
// bytes, and each is scanned when canonicalised.
func plainRun[T ~string | ~[]byte](s T) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte is flagged (its high bit set) when it is below 0x20, or
		// zero after XOR with '"' or '\\': the classic has-zero-byte test,
		// which can flag a byte only after a byte truly flagged, never
		// miss one.
		lt := (w - 0x20*ones) &^ w
		q := w ^ '"'*ones
		bs := w ^ '\\'*ones
		if (lt|((q-ones)&^q)|((bs-ones)&^bs))&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			break
		}
	}
	return i
}
