package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// TestRequestDataCannotSmuggleAPrompt: a chat request's data may carry
// context (cwd, timezone) but not the keys turnlog's middlewares record
// about prompts, trust and locks. Before, {"systemprompt.none": "x"} was
// stored and the template then gave the conversation no system prompt at
// all; now the request fails with the reason and nothing of it is applied,
// unless the profile allows the key.
func TestRequestDataCannotSmuggleAPrompt(t *testing.T) {
	set, err := profile.Parse([]byte(profile.DefaultYAML + `
  lenient:
    middlewares: [template]
    allow_request_data: [systemprompt.none]
`))
	require.NoError(t, err)
	l := startWorker(t, natstest.Start(t), func(c *worker.Config) { c.Profiles = set })
	ctx := context.Background()
	send := func(conv, profileName string, data map[string]string) {
		t.Helper()
		_, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: "hello", Profile: profileName, Data: data})
		require.NoError(t, err)
	}

	for _, key := range []string{middlewares.DataNoSystemPrompt, "systemprompt.lock", "trust.operator", "globalprompt.id"} {
		t.Run(key, func(t *testing.T) {
			conv := sanitize("smuggle-" + key)
			send(conv, "", map[string]string{key: "x", "tz": "UTC"})
			reason := failedReason(t, l, conv)
			assert.Contains(t, reason, `data key "`+key+`" is reserved`)
			assert.Contains(t, reason, "allow_request_data")
			for rec, err := range l.Events(ctx, conv) {
				require.NoError(t, err)
				assert.NotEqual(t, events.TypeDataSet, rec.Type, "none of the request's data is applied")
			}
		})
	}

	t.Run("context keys are fine", func(t *testing.T) {
		send("ctx", "", map[string]string{middlewares.DataCwd: t.TempDir(), "tz": "UTC"})
		assert.Empty(t, failedReason(t, l, "ctx"))
		turn, err := l.Load(ctx, "ctx")
		require.NoError(t, err)
		assert.Equal(t, "UTC", turn.Data["tz"])
		_, _, ok := turn.SystemPrompt()
		assert.True(t, ok)
	})

	t.Run("a profile may allow a reserved key", func(t *testing.T) {
		send("allowed", "lenient", map[string]string{middlewares.DataNoSystemPrompt: "by request"})
		assert.Empty(t, failedReason(t, l, "allowed"))
		turn, err := l.Load(ctx, "allowed")
		require.NoError(t, err)
		_, _, ok := turn.SystemPrompt()
		assert.False(t, ok, "the profile let the request decide")
	})
}

// TestRequestCwdOutsideTheWorkersRoots: a worker started with CwdRoots
// (what `turnlog worker` and `serve` do, by default with the directory
// they run in) answers a request whose cwd lies under them with the
// directory's AGENTS.md in the prompt, and fails one whose cwd lies
// elsewhere, naming the cwd and the setting, so that whoever may send
// requests cannot point file: at any directory the worker can read.
func TestRequestCwdOutsideTheWorkersRoots(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("Project rules."), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "AGENTS.md"), []byte("Someone else's secrets."), 0o600))
	l := startWorker(t, natstest.Start(t), func(c *worker.Config) { c.CwdRoots = []string{root} })
	ctx := context.Background()

	_, err := worker.Send(ctx, l, worker.Request{Conversation: "inside", Text: "hello", Data: map[string]string{middlewares.DataCwd: root}})
	require.NoError(t, err)
	assert.Empty(t, failedReason(t, l, "inside"))
	turn, err := l.Load(ctx, "inside")
	require.NoError(t, err)
	sp, _, ok := turn.SystemPrompt()
	require.True(t, ok)
	assert.Contains(t, sp.Text, "Project rules.")

	_, err = worker.Send(ctx, l, worker.Request{Conversation: "outside", Text: "hello", Data: map[string]string{middlewares.DataCwd: elsewhere}})
	require.NoError(t, err)
	reason := failedReason(t, l, "outside")
	assert.Contains(t, reason, elsewhere)
	assert.Contains(t, reason, "cwd_roots")
	for rec, err := range l.Events(ctx, "outside") {
		require.NoError(t, err)
		assert.NotContains(t, fmt.Sprintf("%+v", rec.Payload), "secrets", "nothing of the file reaches the log")
	}
}
