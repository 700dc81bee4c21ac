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

// TestStatusListsTheBuckets: `turnlog status` shows the buckets beside
// the streams (it showed none, so the threading index, which has no byte
// limit, grew unseen), a bucket nothing has needed yet as not created.
func TestStatusListsTheBuckets(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, false)
	out, errOut, code := e.run("", "status")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `TURNLOG_THREADS +- +- +- +- +gateway threading index \(not created\)`, out)
	assert.Regexp(t, `TURNLOG_SNAPSHOTS +\d+ +\d+ +\d+ +1 +snapshots`, out)

	threads, err := e.log.Threads(ctx)
	require.NoError(t, err)
	require.NoError(t, threads.Put(ctx, map[string]string{"k1": "c1", "k2": "c1"}))
	out, errOut, code = e.run("", "status", "--json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		Buckets []bucketStatus `json:"buckets"`
		Storage storageStatus  `json:"storage"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	var found *bucketStatus
	for i, b := range st.Buckets {
		if b.Name == "TURNLOG_THREADS" {
			found = &st.Buckets[i]
		}
	}
	require.NotNil(t, found, "%s", out)
	assert.True(t, found.Created)
	assert.Equal(t, uint64(2), found.Keys)
	assert.Positive(t, found.Bytes)
}
