package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/benchmark"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// lsDoc is the JSON of `turnlog ls --json`.
type lsDoc struct {
	Conversations []replay.Conversation `json:"conversations"`
	Total         int                   `json:"total"`
}

func (e *auditEnv) ls(args ...string) lsDoc {
	e.t.Helper()
	out, errOut, code := e.run("", append([]string{"ls", "--json"}, args...)...)
	require.Equal(e.t, 0, code, errOut)
	var doc lsDoc
	require.NoError(e.t, json.Unmarshal([]byte(out), &doc), out)
	return doc
}

func ids(cs []replay.Conversation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestChatWithoutIDPrintsTheNewConversation(t *testing.T) {
	e := newAuditEnv(t, true)
	out, errOut, code := e.run("", "chat", "-m", "hello there")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "You said: hello there\n", out, "stdout stays the answer")
	m := regexp.MustCompile(`(?m)^conversation ([0-9A-Z]{26})$`).FindStringSubmatch(errOut)
	require.NotNil(t, m, "stderr names the new conversation: %q", errOut)
	_, err := ulid.ParseStrict(m[1])
	require.NoError(t, err)

	doc := e.ls()
	require.Equal(t, []string{m[1]}, ids(doc.Conversations), "the printed ID is the conversation ls lists")
	c := doc.Conversations[0]
	assert.Equal(t, 1, c.ModelCalls)
	assert.False(t, c.LastRequestFailed)
	assert.Positive(t, c.Events)

	// With an ID given, stderr stays quiet.
	_, errOut, code = e.run("", "chat", "-m", "again", m[1])
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
}

func TestChatSendsCwdAndData(t *testing.T) {
	e := newAuditEnv(t, true)
	dir := t.TempDir()
	rel, err := filepath.Rel(mustGetwd(t), dir)
	require.NoError(t, err)
	_, errOut, code := e.run("", "chat", "--cwd", rel, "--data", "timezone=Europe/Paris", "--data", "page=a=b", "-m", "hi", "withdata")
	require.Equal(t, 0, code, errOut)
	turn, err := e.log.Load(context.Background(), "withdata")
	require.NoError(t, err)
	assert.Equal(t, dir, turn.Data["cwd"], "--cwd is sent made absolute")
	assert.Equal(t, "Europe/Paris", turn.Data["timezone"])
	assert.Equal(t, "a=b", turn.Data["page"], "only the first = separates key and value")

	// Interactive mode sends the same data with every line.
	_, errOut, code = e.run("hello\n/quit\n", "chat", "--data", "tone=dry", "interactive")
	require.Equal(t, 0, code, errOut)
	turn, err = e.log.Load(context.Background(), "interactive")
	require.NoError(t, err)
	assert.Equal(t, "dry", turn.Data["tone"])

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no equals sign", []string{"--data", "tz"}, `--data "tz": use KEY=VALUE`},
		{"empty key", []string{"--data", "=x"}, `--data "=x": use KEY=VALUE`},
		{"key twice", []string{"--data", "a=1", "--data", "a=2"}, `key "a" given twice`},
		{"missing cwd", []string{"--cwd", filepath.Join(dir, "nope")}, "no such file or directory"},
		{"cwd is a file", []string{"--cwd", writeFile(t, dir, "f.txt")}, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := e.run("", append([]string{"chat", "-m", "x", "refused"}, tc.args...)...)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, tc.want)
		})
	}
	assert.NotContains(t, ids(e.ls().Conversations), "refused", "a refused command sends nothing")
}

func TestLs(t *testing.T) {
	e := newAuditEnv(t, true)
	e.ask("alpha-1", "one")
	e.ask("beta-1", "two")
	e.ask("alpha-2", "three")
	e.ask("alpha-2", "four")
	// A request with an unknown profile ends as request.failed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	turn, err := e.log.Load(ctx, "beta-1")
	require.NoError(t, err)
	req, err := worker.Send(ctx, e.log, worker.Request{Conversation: "beta-1", Text: "x", Profile: "nope"})
	require.NoError(t, err)
	_, err = worker.Await(ctx, e.log, "beta-1", req.RequestID, turn.Seq, turn.Events)
	require.ErrorIs(t, err, worker.ErrFailed)

	doc := e.ls()
	assert.Equal(t, []string{"beta-1", "alpha-2", "alpha-1"}, ids(doc.Conversations), "newest first")
	assert.Equal(t, 3, doc.Total)
	byID := map[string]replay.Conversation{}
	for _, c := range doc.Conversations {
		byID[c.ID] = c
	}
	assert.Equal(t, 2, byID["alpha-2"].ModelCalls)
	assert.Equal(t, 1, byID["beta-1"].ModelCalls, "the failed request made no model call")
	assert.True(t, byID["beta-1"].LastRequestFailed)
	assert.Contains(t, byID["beta-1"].LastFailure, "nope")
	assert.False(t, byID["alpha-2"].LastRequestFailed)
	turn, err = e.log.Load(ctx, "alpha-2")
	require.NoError(t, err)
	assert.Equal(t, turn.Events, byID["alpha-2"].Events, "events counts every event, as positions do")

	assert.Equal(t, []string{"alpha-2", "alpha-1"}, ids(e.ls("--id-prefix", "alpha").Conversations))
	assert.Equal(t, []string{"beta-1"}, ids(e.ls("--search", "TA-").Conversations), "search ignores case")
	limited := e.ls("--limit", "1")
	assert.Equal(t, []string{"beta-1"}, ids(limited.Conversations))
	assert.Equal(t, 3, limited.Total, "total counts every match")

	out, errOut, code := e.run("", "conversations", "--limit", "2")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.True(t, strings.HasPrefix(lines[0], "CONVERSATION"))
	assert.True(t, strings.HasPrefix(lines[1], "beta-1 "))
	assert.Contains(t, lines[1], "failed: ")
	assert.Contains(t, errOut, "2 of 3 conversations shown")

	_, errOut, code = e.run("", "ls", "--limit", "0")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--limit 0")
}

// Issue 17: `ls --json` dropped model_calls and last_request_failed when
// they were 0 and false, so a script reading .model_calls found nothing.
func TestLsJSONHasEveryKey(t *testing.T) {
	e := newAuditEnv(t, true)
	e.ask("answered", "hello")
	// A request with an unknown profile fails before any model call.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := worker.Send(ctx, e.log, worker.Request{Conversation: "refused", Text: "x", Profile: "nope"})
	require.NoError(t, err)
	_, err = worker.Await(ctx, e.log, "refused", req.RequestID, 0, 0)
	require.ErrorIs(t, err, worker.ErrFailed)

	out, errOut, code := e.run("", "ls", "--json")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Conversations []map[string]any `json:"conversations"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	got := map[string]map[string]any{}
	for _, c := range doc.Conversations {
		got[c["id"].(string)] = c
	}
	require.Len(t, got, 2, out)
	for _, key := range []string{"id", "messages", "last_activity", "events", "model_calls", "last_request_failed", "quarantined"} {
		for id, c := range got {
			assert.Contains(t, c, key, "%s: every conversation has %q", id, key)
		}
	}
	assert.Equal(t, 0.0, got["refused"]["model_calls"])
	assert.Equal(t, true, got["refused"]["last_request_failed"])
	assert.Equal(t, 1.0, got["answered"]["model_calls"])
	assert.Equal(t, false, got["answered"]["last_request_failed"])
	assert.NotContains(t, got["answered"], "last_failure", "the reason is there only when the last request failed")
}

func TestLsEmpty(t *testing.T) {
	e := newAuditEnv(t, false)
	out, errOut, code := e.run("", "ls")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "no conversations; start one with: turnlog chat -m hello")
	assert.Equal(t, lsDoc{Conversations: []replay.Conversation{}}, e.ls())
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

func writeFile(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
	return path
}

func TestSmallDefects(t *testing.T) {
	e := newAuditEnv(t, false)
	t.Run("template set says no bucket revision", func(t *testing.T) {
		out, errOut, code := e.run("You are terse.", "template", "set", "-")
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `^template set \(14 bytes, sha256 [0-9a-f]{12}\); new conversations`, out)
		assert.NotContains(t, out, "revision", "a first set read \"revision 2\": the bucket's sequence, not a count")
	})
	t.Run("replay of a missing conversation prints no table", func(t *testing.T) {
		for _, args := range [][]string{{"replay", "nobody"}, {"replay", "nobody", "-o", "json"}} {
			out, errOut, code := e.run("", args...)
			assert.NotZero(t, code)
			assert.Empty(t, out, "stdout stays empty: %v", args)
			assert.Contains(t, errOut, "nobody")
		}
	})
	t.Run("bench labels the size it measured", func(t *testing.T) {
		var out strings.Builder
		require.NoError(t, writeBenchText(&out, benchmark.Results{LongConversationEvents: 10_000, LoadMs1k: 1}))
		assert.Contains(t, out.String(), "Load, 10,000 events (compacted)")
		assert.NotContains(t, out.String(), "100,000")
	})
	t.Run("serve's hint names a non-default server", func(t *testing.T) {
		assert.Equal(t, "turnlog chat -m hello", chatHint("nats://127.0.0.1:4222", false))
		assert.Equal(t, "turnlog chat --nats-url nats://127.0.0.1:5333 -m hello", chatHint("nats://127.0.0.1:5333", true))
	})
}

func TestCompletionIsDocumented(t *testing.T) {
	run := func(args ...string) string {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		require.NoError(t, root.Execute())
		return out.String()
	}
	assert.Contains(t, run("--help"), "source <(turnlog completion bash)")
	script := run("completion", "bash")
	assert.Contains(t, script, "bash completion")
	assert.Contains(t, script, "__start_turnlog")
}

// Conversations an app made through the gateway, or chats begun without
// an ID, are named by ULIDs alone: ls could not tell them apart. Each
// now shows its first user message, on one line with the terminal's
// control characters left out (a user's text must not drive the
// terminal of whoever lists it), and a fork names what it was forked
// from.
func TestLsShowsFirstMessage(t *testing.T) {
	e := newAuditEnv(t, true)
	e.ask("plain", "how do I reset my password?")
	e.ask("hostile", "line one\nline two \x1b]0;owned\x07\x1b[31mred")
	_, errOut, code := e.run("", "fork", "plain", "branch")
	require.Equal(t, 0, code, errOut)

	byID := map[string]replay.Conversation{}
	for _, c := range e.ls().Conversations {
		byID[c.ID] = c
	}
	assert.Equal(t, "how do I reset my password?", byID["plain"].FirstMessage)
	assert.Equal(t, "plain", byID["branch"].ForkedFrom)
	assert.Equal(t, "how do I reset my password?", byID["branch"].FirstMessage, "a fork's first message is in the blocks it began with")
	assert.Empty(t, byID["plain"].ForkedFrom)

	out, errOut, code := e.run("", "ls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "FIRST MESSAGE")
	assert.Contains(t, out, "how do I reset my password?")
	assert.Contains(t, out, "(fork of plain)")
	assert.NotContains(t, out, "\x1b", "no escape sequence reaches the terminal")
	assert.NotContains(t, out, "\x07")
	assert.Contains(t, out, "line one line two")
}
