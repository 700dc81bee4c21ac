package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
)

// TestStatusCountsAndListsDeadLetters: `turnlog status` counts the dead
// letters and says how to list them; --dead lists subject, reason and
// time, with another client's bytes quoted, never raw on the terminal.
func TestStatusCountsAndListsDeadLetters(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, false)
	out, errOut, code := e.run("", "status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "dead letters: 0\n")

	require.NoError(t, e.log.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: "turnlog.chat.*", RequestSeq: 7,
		Reason: "the subject names no valid conversation", Data: []byte("hi\x1b[2J")}))
	out, errOut, code = e.run("", "status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "dead letters: 1 (turnlog status --dead lists them)")
	assert.Contains(t, out, "TURNLOG_DEAD_LETTERS")

	out, errOut, code = e.run("", "status", "--dead")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"turnlog.chat.*"`)
	assert.Contains(t, out, `"the subject names no valid conversation"`)
	assert.Contains(t, out, `"hi\x1b[2J"`, "escaped")
	assert.NotContains(t, out, "\x1b")

	out, errOut, code = e.run("", "status", "--dead", "--json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		DeadLetters uint64                `json:"dead_letters"`
		Dead        []eventlog.DeadLetter `json:"dead"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.Equal(t, uint64(1), st.DeadLetters)
	require.Len(t, st.Dead, 1)
	assert.Equal(t, "turnlog.chat.*", st.Dead[0].Subject)
	assert.False(t, st.Dead[0].Time.IsZero())

	_, errOut, code = e.run("", "status", "--dead", "--limit", "0")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--limit 0")
}
