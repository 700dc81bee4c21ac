package gateway

import (
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunks is a body that arrives in the given pieces.
type chunks struct{ pieces []string }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.pieces[0])
	if c.pieces[0] = c.pieces[0][n:]; c.pieces[0] == "" {
		c.pieces = c.pieces[1:]
	}
	return n, nil
}

func (c *chunks) Close() error { return nil }

// TestMaskedBodyWhateverTheCuts: the key, whole or cut short to half its
// length or more, is masked wherever the body's reads cut it; everything
// else, and the length, pass as they came.
func TestMaskedBodyWhateverTheCuts(t *testing.T) {
	const key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123"
	cases := []struct {
		name, body string
		masked     []string // the spans that must not reach the app
	}{
		{name: "the whole key", body: `{"error":"Incorrect API key provided: ` + key + `"}`, masked: []string{key}},
		{name: "twice", body: key + " and " + key, masked: []string{key}},
		{name: "cut short in the middle", body: `provided: ` + key[:25] + `…, check it`, masked: []string{key[:25]}},
		{name: "cut short at the end", body: `provided: ` + key[:30], masked: []string{key[:30]}},
		{name: "the key's common prefix alone is no key", body: `keys look like sk-proj-xxxx`},
		{name: "nothing of it", body: strings.Repeat("data: {}\n\n", 50)},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range 200 {
				var pieces []string
				for rest := tc.body; rest != ""; {
					n := min(len(rest), 1+rng.IntN(12))
					pieces, rest = append(pieces, rest[:n]), rest[n:]
				}
				got, err := io.ReadAll(maskKeys(&chunks{pieces: pieces}, []string{key}))
				require.NoError(t, err)
				require.Len(t, got, len(tc.body), "pieces %q", pieces)
				want := tc.body
				for _, span := range tc.masked {
					want = strings.ReplaceAll(want, span, string(maskOf(len(span))))
				}
				require.Equal(t, want, string(got), "pieces %q", pieces)
				assert.NotContains(t, string(got), key[:len(key)/2+1])
			}
		})
	}
}

// TestMaskedBodyHoldsOnlyWhatMayBeTheKey: a stream's events reach the app
// as they arrive; only a tail that begins the key waits for the next read.
func TestMaskedBodyHoldsOnlyWhatMayBeTheKey(t *testing.T) {
	const key = "sk-provider-secret"
	m := maskKeys(&chunks{pieces: []string{"data: {\"x\":1}\n\n", "data: {\"e\":\"sk-prov", "ider-secret\"}\n\n"}}, []string{key})
	p := make([]byte, 100)
	n, err := m.Read(p)
	require.NoError(t, err)
	assert.Equal(t, "data: {\"x\":1}\n\n", string(p[:n]), "an event whole, at once")
	n, err = m.Read(p)
	require.NoError(t, err)
	assert.Equal(t, "data: {\"e\":\"", string(p[:n]), "what may begin the key is held")
	n, err = m.Read(p)
	require.NoError(t, err)
	assert.Equal(t, string(maskOf(len(key)))+"\"}\n\n", string(p[:n]))
}
