package cli

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// TestChatTimeoutNamesTheRequestAndResendsOnce: with no worker running,
// `chat -m` gives up after --timeout with exit 3, naming the request and
// the command that waits for it again; that command, once a worker runs,
// prints the answer, and the log holds the request once.
func TestChatTimeoutNamesTheRequestAndResendsOnce(t *testing.T) {
	e := newAuditEnv(t, false)
	out, errOut, code := e.run("", "chat", "--timeout", "1s", "-m", "it's me", "later")
	assert.Equal(t, 3, code, errOut)
	assert.Empty(t, out)
	m := regexp.MustCompile(`turnlog chat --request-id ([0-9A-Z]{26}) -m '(.*)' later`).FindStringSubmatch(errOut)
	require.NotNil(t, m, "stderr says how to wait again: %q", errOut)
	assert.Equal(t, `it'\''s me`, m[2], "the message is quoted for the shell")
	assert.Contains(t, errOut, "turnlog replay later")
	assert.NotContains(t, errOut, "\n", "one line") // printed by main with a trailing newline only
	id := m[1]

	profiles, err := profile.Load("")
	require.NoError(t, err)
	runWorker(t, worker.Config{Log: e.log, Conn: e.log.JetStream().Conn(), Profiles: profiles,
		ShutdownGrace: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	for range 2 {
		out, errOut, code = e.run("", "chat", "--request-id", id, "-m", "it's me", "later")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, "You said: it's me\n", out)
	}
	users := 0
	for rec, err := range e.log.Events(context.Background(), "later") {
		require.NoError(t, err)
		if rec.Type == events.TypeUserAppended {
			assert.Equal(t, id, rec.Cause)
			users++
		}
	}
	assert.Equal(t, 1, users, "asked once")

	_, errOut, code = e.run("", "chat", "--request-id", "not-a-ulid", "-m", "x", "later")
	assert.Equal(t, 2, code)
	assert.True(t, strings.Contains(errOut, "not a ULID"), errOut)
}

// TestChatRefusesARequestIDOfAnotherConversation: `chat --request-id` with
// the ID of a request sent to another conversation (the command printed by
// a timeout, run against the wrong conversation) exits 1 at once, naming
// the ID and the conversation it belongs to. It used to wait out
// --timeout and exit 3: JetStream had dropped the request as a duplicate,
// and nothing told the user.
func TestChatRefusesARequestIDOfAnotherConversation(t *testing.T) {
	e := newAuditEnv(t, false)
	_, errOut, code := e.run("", "chat", "--timeout", "1s", "-m", "mine", "owner")
	require.Equal(t, 3, code, errOut)
	m := regexp.MustCompile(`--request-id ([0-9A-Z]{26})`).FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	id := m[1]

	out, errOut, code := e.run("", "chat", "--timeout", "5s", "--request-id", id, "-m", "mine", "thief")
	assert.Equal(t, 1, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, id)
	assert.Contains(t, errOut, `conversation "owner"`)
	assert.Contains(t, errOut, "fresh request_id")
	n, err := e.log.LastSeq(context.Background(), "thief")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing reached the other conversation")
}
