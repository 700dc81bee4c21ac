package calls

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParseRequest: whatever the body, ParseRequest does not panic; a body
// it reads is JSON, its input hash is that of the body's canonical form,
// and reading it through a cache (twice: once filling, once hitting)
// gives the same request.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a\"b"}]}],"tools":[{"type":"function"}]}`,
		` { "messages" : [ ] , "temperature" : 0.50 } `,
		`{"messages":[{"role":"user","content":"x"},]}`,
		`{"messages":[{"role":"user","content":"x"}]} x`,
		`{"a":tru,"messages":[]}`,
		`null`, `[]`, `{"messages":"s"}`, `{"model":"m","model":"n","messages":[]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := ParseRequest(ChatCompletions, []byte(body))
		if err != nil {
			return
		}
		require.True(t, json.Valid([]byte(body)), "read a body that is not JSON: %q", body)
		c, err := Canonical([]byte(body))
		require.NoError(t, err)
		assert.Equal(t, hashCanonical(c), req.InputHash)
		cache := NewParseCache(1 << 20)
		for range 2 {
			cached, err := cache.ParseRequest(ChatCompletions, []byte(body))
			require.NoError(t, err)
			assert.Equal(t, req, cached)
		}
	})
}

// skipString ends a string at its first quote that is not escaped, however
// many backslashes come before it.
func TestSkipString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int // -1: no end
	}{
		{`"abc"`, 5}, {`""x`, 2}, {`"a\"b"`, 6}, {`"a\\"b"`, 5}, {`"a\\\"b"`, 8},
		{`"\\\\"`, 6}, {`"\\\\\"`, -1}, {`"abc`, -1}, {`"a\"`, -1}, {`"\"`, -1}, {`"é\u0022"`, 10},
	} {
		got, err := skipString([]byte(tc.in), 0)
		if tc.want < 0 {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}
