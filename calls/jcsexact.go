package calls

import (
	"math/big"
	"strings"
)

// canonicalExact is a JSON text's canonical form (Canonical) as a key
// that tells apart what the text says, and whether it could: JCS writes a
// number as the double nearest it, so an integer past 2^53 loses its last
// digits (such a number is written here as its exact value instead, and
// the key is then not JSON), keeps the last value of a name given twice,
// and reads invalid UTF-8 and lone surrogates as U+FFFD (exact is false
// then). Two texts with one canonical form are the same JSON to a reader
// that reads as JCS does, not to every reader: a model reads the text.
func canonicalExact(raw []byte) (key []byte, exact bool, err error) {
	s := canonScanner{b: raw, exactNumbers: true}
	key, err = s.value(make([]byte, 0, len(raw)))
	if err != nil {
		return nil, false, err
	}
	if s.space(); s.i != len(s.b) {
		return nil, false, nil
	}
	return key, !s.inexact, nil
}

// exactNumber replaces out[n:], the canonical form of number literal
// text, whose double is f, by text's exact value when they differ (1.0,
// 1e2 and 0.10 are written otherwise with the value of their double;
// 12345678901234567891 is not 12345678901234567000).
func (s *canonScanner) exactNumber(out []byte, n int, text []byte, f float64) []byte {
	if f == 0 {
		// Zero by its digits, or a number too small for a double (its
		// exponent may be too large to read exactly): inexact.
		mant, _, _ := strings.Cut(strings.ToLower(string(text)), "e")
		if strings.Trim(mant, "-+0.") != "" {
			s.inexact = true
		}
		return out
	}
	v, ok := new(big.Rat).SetString(string(text))
	if !ok {
		s.inexact = true
		return out
	}
	if d, ok := new(big.Rat).SetString(string(out[n:])); ok && v.Cmp(d) == 0 {
		return out
	}
	return append(out[:n], v.RatString()...)
}
