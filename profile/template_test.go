package profile_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

func TestTemplateMiddlewareValidation(t *testing.T) {
	tests := []struct {
		name string
		p    profile.Profile
		want string // "" for valid
	}{
		{name: "template alone", p: profile.Profile{Middlewares: []string{"template"}}},
		{name: "template before compaction", p: profile.Profile{Middlewares: []string{"template", "compaction"}}},
		{name: "template then append", p: profile.Profile{Middlewares: []string{"template", "systemprompt_append"}}},
		{name: "absolute cwd", p: profile.Profile{Middlewares: []string{"template"}, Cwd: "/srv/project"}},
		{name: "template after compaction", p: profile.Profile{Middlewares: []string{"compaction", "template"}}, want: `must come before "compaction"`},
		{name: "template and systemprompt", p: profile.Profile{Middlewares: []string{"systemprompt", "template"}}, want: "both set the system prompt"},
		{name: "relative cwd", p: profile.Profile{Middlewares: []string{"template"}, Cwd: "project"}, want: "relative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestDefaultProfileUsesTheTemplate(t *testing.T) {
	set, err := profile.Load("")
	require.NoError(t, err)
	p := set[profile.DefaultName]
	assert.Contains(t, p.Middlewares, "template")
	assert.NotContains(t, p.Middlewares, "systemprompt")
}

func TestTemplateMiddlewareReadsProfileTemplates(t *testing.T) {
	p := profile.Profile{Middlewares: []string{"template"}, Templates: middlewares.StaticTemplate("From the store for [prompt:conversation_id].")}
	b, err := p.Build(slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	tx := engine.NewTx(projector.New("c1"), "r1")
	require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: "u", Text: "hi"}))
	require.NoError(t, b.Loop.Run(context.Background(), tx))
	sp, _, ok := tx.Turn().SystemPrompt()
	require.True(t, ok)
	assert.Equal(t, "From the store for c1.", sp.Text)

	p.Templates = nil
	b, err = p.Build(slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	tx = engine.NewTx(projector.New("c2"), "r2")
	require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: "u", Text: "hi"}))
	require.NoError(t, b.Loop.Run(context.Background(), tx))
	sp, _, _ = tx.Turn().SystemPrompt()
	assert.Equal(t, "You are a helpful assistant.", sp.Text, "without a store: the built-in default")
}
