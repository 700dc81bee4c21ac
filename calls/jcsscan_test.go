package calls

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// canonicalByDecoding is Canonical as it was first written: decoded by
// encoding/json into a tree of values, then written out. FuzzCanonical
// holds the one-pass Canonical to it.
func canonicalByDecoding(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("not JSON: more than one value, or text after the value")
	}
	if err := everyNumberFits(raw); err != nil {
		return nil, err
	}
	return appendCanonical(nil, v)
}

// everyNumberFits refuses a text with a number no double holds anywhere
// in it, also under a name given again later in its object, whose value
// decoding drops: Canonical refuses what it cannot write as it reads.
func everyNumberFits(raw []byte) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		if n, ok := tok.(json.Number); ok {
			if f, _ := strconv.ParseFloat(string(n), 64); math.IsInf(f, 0) {
				return fmt.Errorf("number %s is out of the range of a double, which canonical JSON cannot write", n)
			}
		}
	}
}

func appendCanonical(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("number %s: %w", v, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("number %s is out of the range of a double, which canonical JSON cannot write", v)
		}
		return appendNumber(b, f), nil
	case float64:
		return appendNumber(b, v), nil
	case string:
		return appendString(b, v), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sortUTF16(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("canonical JSON: unexpected %T", v)
}

// FuzzCanonical: Canonical accepts what encoding/json accepts and writes
// what decoding it and writing it out again writes.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{ "b": 1, "a": [true, null, "x"] }`, `[1.0, 1e21, 1e-7, 0.000001, 123.456e2, -0, 1E3]`,
		`"\u0041\u00e9\n\u001f\"\\/"`, `{"\ud83d\ude00":1,"\ufb33":2}`, `{"a":1,"a":2,"b":{"a":[]}}`,
		`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, "\"\xff\xfe\"", `1e400`, `-1e-400`, `01`, `1.`, `-`,
		`{"a":1} x`, `{"":2e400,"":0}`, `[1,]`, `{"a" 1}`, `"\x"`, "\"a\tb\"", `[[[[]]]]`, ` null `, `tru`, `{"b":{"d":1,"c":2},"a":"z"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, wantErr := canonicalByDecoding(raw)
		got, err := Canonical(raw)
		if wantErr != nil {
			assert.Error(t, err, "%q: encoding/json refuses it: %v", raw, wantErr)
			return
		}
		require.NoError(t, err, "%q", raw)
		assert.Equal(t, string(want), string(got), "%q", raw)
	})
}

// Nesting past encoding/json's depth is refused, not a stack overflow.
func TestCanonicalDepth(t *testing.T) {
	deep := bytes.Repeat([]byte("["), maxCanonicalDepth+1)
	_, err := Canonical(deep)
	assert.ErrorContains(t, err, "depth")
	ok := append(bytes.Repeat([]byte("["), 100), bytes.Repeat([]byte("]"), 100)...)
	_, err = Canonical(ok)
	assert.NoError(t, err)
}

// BenchmarkCanonical: a chat message with a tool call (about 700 bytes),
// written canonical in one pass (scan) and as it first was, decoded into a
// tree of values and written out (decode).
func BenchmarkCanonical(b *testing.B) {
	raw := []byte(`{"role":"assistant","content":"` + strings.Repeat("The request was answered from the cached history. ", 12) +
		`","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null}`)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := Canonical(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := canonicalByDecoding(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPlainRun puts each byte a JSON string cannot hold as it is at each
// position of a text, around the eight-byte words plainRun tests at once,
// and beside bytes that could fool a word test (0x7f, 0x80, 0xff, and the
// neighbours of '"' and '\\').
func TestPlainRun(t *testing.T) {
	naive := func(s []byte) int {
		for i, c := range s {
			if c < 0x20 || c == '"' || c == '\\' {
				return i
			}
		}
		return len(s)
	}
	fillers := []byte{'a', 0x7f, 0x80, 0xff, '!', '#', '[', ']', 0x20, 0xa2, 0xdc}
	for _, special := range []byte{0, 0x1f, '\n', '"', '\\'} {
		for _, fill := range fillers {
			for n := 0; n <= 20; n++ {
				for at := 0; at <= n; at++ {
					s := bytes.Repeat([]byte{fill}, n)
					if at < n {
						s[at] = special
					}
					if got, want := plainRun(s), naive(s); got != want {
						t.Fatalf("plainRun(%q) = %d, want %d", s, got, want)
					}
					if got, want := plainRun(string(s)), naive(s); got != want {
						t.Fatalf("plainRun(string %q) = %d, want %d", s, got, want)
					}
				}
			}
		}
	}
}
