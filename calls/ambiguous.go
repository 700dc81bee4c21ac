package calls

// An item whose member names JSON readers disagree on: the gateway
// records what the provider was sent only where every reader reads the
// same thing.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// ErrAmbiguousJSON says a request's item gives a member name twice in
// one object, or two names that differ only in case ("content" and
// "Content"). Readers disagree on such JSON: Go's encoding/json matches
// names without regard to case and merges a repeated object, Python and
// JavaScript keep the last value of a name and match case, others keep
// the first or refuse it. What the model was sent cannot be told from the
// bytes, so such a call is recorded by the hash of its bytes with this
// reason (calls.Call.Unparsed), never as one reading of them: an app, or
// whoever writes into its requests, could otherwise have the log show
// one text while the provider read another.
var ErrAmbiguousJSON = errors.New("member names JSON readers read differently")

// canonicalItem is Canonical for an item of a request's input, refusing
// one with ambiguous member names (ErrAmbiguousJSON).
func canonicalItem(raw []byte) ([]byte, error) {
	out, ambiguous, err := canonical(raw, true)
	if err != nil {
		return nil, err
	}
	if ambiguous != "" {
		return nil, fmt.Errorf("%w: %s; providers read such an object differently, so what the model was sent cannot be told from it, and the call is recorded by the hash of its bytes alone",
			ErrAmbiguousJSON, ambiguous)
	}
	return out, nil
}

// ambiguousNames describes the first name of an object's members (in
// JCS order, a name given twice side by side) that is given twice, or
// that differs from another only in case; "" when none is.
func ambiguousNames(members []canonMember) string {
	folded := false // a name that case folding could match to another
	for k, m := range members {
		if k > 0 && members[k-1].name == m.name {
			return "an object gives the member " + strconv.Quote(m.name) + " twice"
		}
		for i := 0; i < len(m.name) && !folded; i++ {
			c := m.name[i]
			folded = c >= 'A' && c <= 'Z' || c >= 0x80
		}
	}
	if !folded {
		return ""
	}
	say := func(a, b string) string {
		return "an object gives the members " + strconv.Quote(a) + " and " + strconv.Quote(b) + ", which differ only in case"
	}
	if len(members) <= 16 {
		for k, m := range members {
			for _, o := range members[k+1:] {
				if strings.EqualFold(o.name, m.name) {
					return say(m.name, o.name)
				}
			}
		}
		return ""
	}
	// Many members (a tool's arguments, say): by their folded names, not
	// pair by pair, which a large object would make quadratic.
	seen := make(map[string]string, len(members))
	for _, m := range members {
		k := foldName(m.name)
		if o, ok := seen[k]; ok {
			return say(o, m.name)
		}
		seen[k] = m.name
	}
	return ""
}

// foldName maps every name strings.EqualFold holds equal to one string:
// each rune becomes the smallest of its case-folding orbit.
func foldName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
