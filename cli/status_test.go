package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/natsauth"
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
// limit, grew unseen).
func TestStatusListsTheBuckets(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, false)
	out, errOut, code := e.run("", "status")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `TURNLOG_THREADS +0 +0 +0 +1 +gateway threading index`, out)
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

// TestStatusWithTheClientKey: the client key may not read the threading
// index's stream info (its answer can list every key: every gateway
// conversation, every erased conversation's hash), so `turnlog status`
// with it shows every other count and says why the index's are missing,
// rather than failing on the server's refusal.
func TestStatusWithTheClientKey(t *testing.T) {
	s := startServe(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, s.adminConn(t))
	require.NoError(t, err)
	threads, err := l.Threads(ctx)
	require.NoError(t, err)
	require.NoError(t, threads.Put(ctx, map[string]string{"c.secret-conversation": "secret-conversation"}))
	client := natsauth.KeyFile(natsauth.Dir(s.data), natsauth.Client)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"table", []string{"status"}, "TURNLOG_THREADS  -  -  -  -  gateway threading index (not visible to this credential, such as the client key; the admin key shows it)"},
		{"json", []string{"status", "--json"}, `"not_visible": true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCmd(t, []string{"NATS_CREDS=" + client}, "", append(tc.args, "--nats-url", s.natsURL)...)
			require.Equal(t, 0, code, out)
			assert.NotContains(t, out, "refused")
			assert.Regexp(t, `TURNLOG_SNAPSHOTS|"TURNLOG_SNAPSHOTS"`, out, "the other buckets are shown")
			assert.Contains(t, strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(tc.want), " "))
		})
	}
	out, code := runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "", "status", "--nats-url", s.natsURL)
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `TURNLOG_THREADS +\d+ +\d+ +1 +1 +gateway threading index\n`, out, "the admin key sees the counts")
}
