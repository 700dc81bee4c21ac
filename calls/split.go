package calls

// A request body is split into its members, and its list of messages into
// its items, by this scanner rather than by encoding/json: a client
// re-sends its whole history on every call, and decoding all of it (twice:
// encoding/json validates before it decodes) was most of the gateway's
// time per call. The scanner finds where each value begins and ends; the
// values themselves are read by encoding/json and canonicalised (Canonical
// rejects what is not JSON), except items seen before byte for byte (see
// ParseCache).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// member is one member of a JSON object: its name and its value's bytes.
type member struct {
	name string
	raw  []byte
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] ('"'):
// at the first quote not escaped, which is a quote after an even run of
// backslashes (found with bytes.IndexByte: most of a request's bytes are
// in its strings).
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			break
		}
		end := j + k
		escapes := 0
		for p := end - 1; p > i && b[p] == '\\'; p-- {
			escapes++
		}
		if escapes%2 == 0 {
			return end + 1, nil
		}
		j = end + 1
	}
	return 0, errors.New("unexpected end of JSON input in a string")
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("unexpected end of JSON input")
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("unexpected end of JSON input")
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	if j == i {
		return 0, fmt.Errorf("invalid character %q looking for a value", b[i])
	}
	return j, nil
}

// splitObject returns the members of the JSON object b, in order.
func splitObject(b []byte) ([]member, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if i < len(b) && b[i] == 'n' {
			return nil, errors.New("the body is null")
		}
		return nil, errors.New("it does not start with '{'")
	}
	var out []member
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return out, trailing(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, errors.New("a member name is not a string")
		}
		end, err := skipString(b, i)
		if err != nil {
			return nil, err
		}
		name, err := memberName(b[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, fmt.Errorf("no ':' after member %q", name)
		}
		i = skipSpace(b, i+1)
		end, err = skipValue(b, i)
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", name, err)
		}
		out = append(out, member{name: name, raw: b[i:end]})
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return out, trailing(b, i+1)
		}
		return nil, fmt.Errorf("no ',' or '}' after member %q", name)
	}
}

// memberName reads a member's name (a JSON string, quotes included): as
// it is when it holds no escape, no control character and only valid
// UTF-8 (every name an API defines), else as encoding/json reads it.
func memberName(q []byte) (string, error) {
	plain := len(q) >= 2
	for i := 1; plain && i < len(q)-1; i++ {
		if c := q[i]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			plain = false
		}
	}
	if plain {
		return string(q[1 : len(q)-1]), nil
	}
	var name string
	err := json.Unmarshal(q, &name)
	return name, err
}

// splitArray returns the elements of the JSON array b.
func splitArray(b []byte) ([][]byte, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errors.New("not a list")
	}
	var out [][]byte
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, trailing(b, i+1)
	}
	for {
		end, err := skipValue(b, i)
		if err != nil {
			return nil, err
		}
		out = append(out, b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return out, trailing(b, i+1)
		}
		return nil, errors.New("no ',' or ']' after an element")
	}
}

func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errors.New("text after the value")
	}
	return nil
}
