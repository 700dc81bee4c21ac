package worker_test

import (
	"context"
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
