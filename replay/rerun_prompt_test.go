package replay_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/templates"
)

// templateProfile is the default profile prompting from the templates
// store of l's installation, as a worker and `replay --rerun` run it.
func templateProfile(t *testing.T, l *eventlog.Log) profile.Profile {
	t.Helper()
	set, err := profile.Load("")
	require.NoError(t, err)
	p := set[profile.DefaultName]
	require.True(t, slices.Contains(p.Middlewares, "template"))
	p.Templates = templates.New(l)
	return p
}

func loopOf(t *testing.T, p profile.Profile) *profile.Built {
	t.Helper()
	b, err := p.Build(slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	return b
}

// `template set` after a conversation was prompted changes new
// conversations only: a re-run renders the template the log recorded, not
// today's global one (it reported a difference at the first prompt).
func TestRerunRendersTheRecordedTemplate(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	p := templateProfile(t, l)
	store := templates.New(l)
	_, err := store.SetGlobal(ctx, "Conversation [prompt:conversation_id]: be brief.")
	require.NoError(t, err)
	c := newConvo(t, l, "templated")
	c.request(loopOf(t, p).Loop, "hello", nil)
	c.request(loopOf(t, p).Loop, "count the words in a b c", nil)

	_, err = store.SetGlobal(ctx, "A new template, [prompt:model].")
	require.NoError(t, err)
	res, err := replay.Rerun(ctx, l, "templated", p)
	require.NoError(t, err)
	assert.True(t, res.OK(), "%+v", res.Difference)
	assert.Equal(t, 2, res.Requests)

	require.NoError(t, store.ResetGlobal(ctx))
	res, err = replay.Rerun(ctx, l, "templated", p)
	require.NoError(t, err)
	assert.True(t, res.OK(), "after a reset too: %+v", res.Difference)
}

// A template that reads the clock renders again with the time the log
// recorded, not today's (it reported a difference at the first prompt).
func TestRerunRendersTheRecordedValues(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Be brief."), 0o600))
	p := templateProfile(t, l)
	_, err := templates.New(l).SetGlobal(ctx, "It is [system:time], [system:date].[if file:AGENTS.md]\n[file:AGENTS.md][endif]")
	require.NoError(t, err)
	then := time.Date(2020, 2, 3, 4, 5, 6, 0, time.UTC)
	recording := p
	recording.Resolve = func(ctx context.Context, refs []template.Ref, env template.Env) (template.Values, error) {
		env.Now = func() time.Time { return then }
		return template.Resolve(ctx, refs, env)
	}
	c := newConvo(t, l, "clocked")
	c.request(loopOf(t, recording).Loop, "hello", map[string]string{middlewares.DataCwd: dir})
	set := firstOf(t, l, "clocked", func(r eventlog.Record) bool { return r.Type == events.TypeSystemPromptSet })
	require.Equal(t, "It is 2020-02-03T04:05:06Z, 2020-02-03.\nBe brief.", set.Payload.(events.SystemPromptSet).Text)

	// The file changes and the clock moves on: neither is read again.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Be verbose."), 0o600))
	res, err := replay.Rerun(ctx, l, "clocked", p)
	require.NoError(t, err)
	assert.True(t, res.OK(), "%+v", res.Difference)
}

// A real change of the chain is still reported, at its first divergence,
// with the recorded template and values in place.
func TestRerunStillReportsAMiddlewareChange(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	p := templateProfile(t, l)
	_, err := templates.New(l).SetGlobal(ctx, "It is [system:time].")
	require.NoError(t, err)
	c := newConvo(t, l, "changed-chain")
	c.request(loopOf(t, p).Loop, "hello", nil)
	started := firstOf(t, l, "changed-chain", func(r eventlog.Record) bool { return r.Type == events.TypeInferenceStarted })

	q := p
	q.Middlewares = slices.Insert(slices.Clone(p.Middlewares), slices.Index(p.Middlewares, "template")+1, "systemprompt_append")
	q.SystemPrompt = "Answer in French."
	res, err := replay.Rerun(ctx, l, "changed-chain", q)
	require.NoError(t, err)
	require.False(t, res.OK())
	assert.Equal(t, started.Pos, res.Difference.N, "the first event that differs: the log's model call, where the re-run appended")
	assert.Contains(t, res.Difference.Reason, "the log has inference.started, the re-run systemprompt.replaced")
}

// A systemprompt.replaced recorded before the Tx filled PreviousSource in
// (by systemprompt_append, global prompts, a template's compaction) has
// none; the re-run's has the prompt's source. The log is as that turnlog
// wrote it, and --rerun reported "the systemprompt.replaced payloads
// differ" at the first append to a prompt with a source.
func TestRerunOfALogWithoutPreviousSource(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	p := templateProfile(t, l)
	_, err := templates.New(l).SetGlobal(ctx, "Be brief.")
	require.NoError(t, err)
	p.Middlewares = slices.Insert(slices.Clone(p.Middlewares), slices.Index(p.Middlewares, "template")+1, "systemprompt_append")
	p.SystemPrompt = "Answer in French."
	c := newConvo(t, l, "appended")
	c.request(loopOf(t, p).Loop, "hello", nil)
	appended := firstOf(t, l, "appended", func(r eventlog.Record) bool { return r.Type == events.TypeSystemPromptReplaced })
	require.NotEmpty(t, appended.Payload.(events.SystemPromptReplaced).PreviousSource, "the Tx filled it in")

	// The same log as the turnlog before the fill wrote it.
	copyConversation(t, l, "appended", "appended-before", func(r *eventlog.Record) {
		if rp, ok := r.Payload.(events.SystemPromptReplaced); ok {
			rp.PreviousSource = ""
			r.Payload = rp
		}
	})
	for _, conv := range []string{"appended", "appended-before"} {
		res, err := replay.Rerun(ctx, l, conv, p)
		require.NoError(t, err)
		assert.True(t, res.OK(), "%s: %+v", conv, res.Difference)
	}
}
