package calls

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeftOutChoiceKeepsItsKeys: a choice TrimOtherChoices leaves out is
// read by OtherChoiceKeys as it was whole (a text, a refusal, a tool call
// whose integer a double reader rounds), so that an app that goes on with
// it is recognised; a marker an older gateway wrote (no "keys"), or one
// whose keys cannot be read, has none and is still read.
func TestLeftOutChoiceKeepsItsKeys(t *testing.T) {
	long := strings.Repeat("x", 4096)
	choices := `[` +
		`{"index":1,"message":{"role":"assistant","content":"choice 1 ` + long + `"},"finish_reason":"stop"},` +
		`{"index":2,"message":{"role":"assistant","content":null,"refusal":"no ` + long + `"},"finish_reason":"stop"},` +
		`{"index":3,"message":{"role":"assistant","content":"text ` + long + `","tool_calls":[{"id":"call_3","type":"function","function":{"name":"f","arguments":"{\"id\":1234567890123456789}"}}]},"finish_reason":"tool_calls"}]`
	whole, err := OtherChoiceKeys(choices)
	require.NoError(t, err)
	require.Len(t, whole, 3)
	assert.True(t, whole[2][1].HasDoubles, "the tool call has a doubles key")

	trimmed, ok := TrimOtherChoices(choices, len(long)+len(long)/2)
	require.True(t, ok)
	require.Contains(t, trimmed, "choice 1 ", "the first of them kept")
	require.NotContains(t, trimmed, "refusal", "the second left out")
	require.NotContains(t, trimmed, "call_3", "the third left out")
	left, err := OtherChoiceKeys(trimmed)
	require.NoError(t, err)
	assert.Equal(t, whole, left, "a choice left out keeps the keys of its blocks")

	for _, tc := range []struct {
		name, choices string
	}{
		{name: "left out by an older gateway", choices: `[{"index":1,"omitted_bytes":4100}]`},
		{name: "keys not digests", choices: `[{"index":1,"omitted_bytes":4100,"keys":[{"kind":"llm_text","key":"zz"}]}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OtherChoiceKeys(tc.choices)
			require.NoError(t, err)
			assert.Equal(t, [][]ChoiceKey{nil}, got, "read, and recognised as no choice")
		})
	}
}

// TestLeftOutSmallChoicesStillFit: choices smaller than the keys of their
// blocks cannot be left out with them and save anything; the outcome
// must still fit, those choices left out without keys, as before keys
// existed, rather than the call fail as too large.
func TestLeftOutSmallChoicesStillFit(t *testing.T) {
	var cs []string
	for i := 1; i <= 40; i++ {
		cs = append(cs, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":"ok %d"},"finish_reason":"stop"}`, i, i))
	}
	choices := "[" + strings.Join(cs, ",") + "]"
	trimmed, ok := TrimOtherChoices(choices, 1000)
	require.True(t, ok, "left out without keys, they save enough")
	assert.LessOrEqual(t, len(trimmed), len(choices)-1000)
	assert.NotContains(t, trimmed, `"keys"`)
}
