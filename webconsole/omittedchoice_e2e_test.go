package webconsole_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
)

// TestE2EOmittedOtherChoice: a call whose other choices were too large to
// store keeps each one left out as {"index": i, "omitted_bytes": n,
// "keys": [...]} (calls.TrimOtherChoices). Its page says that choice was
// left out of the record and how large it was, as replay's summary does;
// it showed an empty "choice i", as if the model had answered nothing.
func TestE2EOmittedOtherChoice(t *testing.T) {
	c := startConsole(t)
	long := strings.Repeat("Red. ", 4000)
	out, err := calls.ParseResponse(calls.ChatCompletions, []byte(`{"id":"c","object":"chat.completion","model":"m","choices":[`+
		`{"index":0,"message":{"role":"assistant","content":"Blue."},"finish_reason":"stop"},`+
		`{"index":1,"message":{"role":"assistant","content":"Green."},"finish_reason":"stop"},`+
		`{"index":2,"message":{"role":"assistant","content":"`+long+`"},"finish_reason":"stop"}]}`))
	require.NoError(t, err)
	trimmed, ok := calls.TrimOtherChoices(out.OtherChoices, len(long)/2)
	require.True(t, ok)
	var others []struct {
		Index        int  `json:"index"`
		OmittedBytes *int `json:"omitted_bytes"`
	}
	require.NoError(t, json.Unmarshal([]byte(trimmed), &others))
	require.Len(t, others, 2)
	require.Nil(t, others[0].OmittedBytes, "choice 1 kept")
	require.NotNil(t, others[1].OmittedBytes, "choice 2 left out")
	out.OtherChoices = trimmed
	openRecordedOutput(t, c, "e2e-omitted-choice", calls.ChatCompletions, `{"model":"m","n":3,"messages":[{"role":"user","content":"Name a colour."}]}`, out)

	assert.Equal(t, "Green.", eval[string](c, `document.querySelector('#call-other-choices li[data-choice="1"] pre').textContent`))
	want := fmt.Sprintf("choice 2: left out of the record (too large to store: %s bytes)", thousands(*others[1].OmittedBytes))
	assert.Equal(t, want, eval[string](c, `document.querySelector('#call-other-choices li[data-choice="2"]').textContent`))
	c.checkClean()
}

// thousands writes n with a comma between each group of three digits,
// as the console writes a byte count.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
