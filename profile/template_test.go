package profile_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
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
		{name: "compaction adopts the current template", p: profile.Profile{Middlewares: []string{"template", "compaction"}, CompactionTemplate: "current"}},
		{name: "compaction keeps the original template", p: profile.Profile{Middlewares: []string{"template", "compaction"}, CompactionTemplate: "original"}},
		{name: "unknown compaction template", p: profile.Profile{Middlewares: []string{"template"}, CompactionTemplate: "latest"}, want: `compaction_template "latest"`},
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

func TestTemplateLimitsParsedAndValidated(t *testing.T) {
	set, err := profile.Parse([]byte(`profiles:
  default:
    middlewares: [template]
    template_limits:
      max_file_bytes: 1024
      max_prompt_bytes: 4096
      git_timeout: 500ms
`))
	require.NoError(t, err)
	assert.Equal(t, profile.TemplateLimits{MaxFileBytes: 1024, MaxPromptBytes: 4096, GitTimeout: 500 * time.Millisecond}, set[profile.DefaultName].TemplateLimits)

	tests := []struct {
		name   string
		limits profile.TemplateLimits
		want   string // "" for valid
	}{
		{name: "defaults", limits: profile.TemplateLimits{}},
		{name: "file cap alone, under the default prompt cap", limits: profile.TemplateLimits{MaxFileBytes: 100 << 10}},
		{name: "negative", limits: profile.TemplateLimits{MaxFileBytes: -1}, want: "must not be negative"},
		{name: "prompt cap too large for one event", limits: profile.TemplateLimits{MaxPromptBytes: 64 << 20}, want: "fit in one event"},
		{name: "file over the prompt", limits: profile.TemplateLimits{MaxFileBytes: 8192, MaxPromptBytes: 4096}, want: "max_file_bytes 8192 is over max_prompt_bytes 4096"},
		{name: "file over the default prompt", limits: profile.TemplateLimits{MaxFileBytes: 1 << 20}, want: "max_file_bytes 1048576 is over max_prompt_bytes 262144"},
		{name: "git timeout too long", limits: profile.TemplateLimits{GitTimeout: time.Hour}, want: "git_timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := profile.Profile{Middlewares: []string{"template"}, TemplateLimits: tc.limits}.Validate()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestTemplateLimitsReachTheMiddleware: a profile's caps are the ones the
// template middleware applies: a per-file cap of 4 bytes cuts the file with
// a note, and a prompt cap of 64 bytes fails the request naming the setting.
func TestTemplateLimitsReachTheMiddleware(t *testing.T) {
	cwd := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("abcdefgh"), 0o600))
	run := func(limits profile.TemplateLimits, tmpl string) (*engine.Tx, error) {
		p := profile.Profile{Middlewares: []string{"template"}, Cwd: cwd, TemplateLimits: limits, Templates: middlewares.StaticTemplate(tmpl)}
		b, err := p.Build(slog.New(slog.DiscardHandler), nil)
		require.NoError(t, err)
		tx := engine.NewTx(projector.New("c1"), "r1")
		require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: "u", Text: "hi"}))
		return tx, b.Loop.Run(context.Background(), tx)
	}
	tx, err := run(profile.TemplateLimits{MaxFileBytes: 4, MaxPromptBytes: 1024}, "[file:notes.txt]")
	require.NoError(t, err)
	sp, _, ok := tx.Turn().SystemPrompt()
	require.True(t, ok)
	assert.Equal(t, "abcd\n[truncated by turnlog: file:notes.txt is longer than 4 bytes]", sp.Text)

	_, err = run(profile.TemplateLimits{MaxFileBytes: 16, MaxPromptBytes: 64}, strings.Repeat("[file:notes.txt]", 9))
	require.ErrorIs(t, err, template.ErrTooLarge)
	assert.ErrorContains(t, err, "cap of 64 bytes at [file:notes.txt]")
	assert.ErrorContains(t, err, "template_limits.max_prompt_bytes")
	assert.False(t, engine.IsTransient(err), "the same template fails again: no retry")
}

// TestCwdRootsInAProfile: cwd_roots must be absolute, and reaches the
// template middleware: a request's cwd outside it fails the request.
func TestCwdRootsInAProfile(t *testing.T) {
	_, err := profile.Parse([]byte("profiles:\n  default:\n    middlewares: [template]\n    cwd_roots: [projects]\n"))
	assert.ErrorContains(t, err, `cwd_roots: "projects" is relative`)

	root, elsewhere := t.TempDir(), t.TempDir()
	p := profile.Profile{Middlewares: []string{"template"}, CwdRoots: []string{root}, Templates: middlewares.StaticTemplate("[file:notes.txt]")}
	b, err := p.Build(slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	tx := engine.NewTx(projector.New("c1"), "r1")
	require.NoError(t, tx.Emit("test", events.DataSet{Values: map[string]string{middlewares.DataCwd: elsewhere}}))
	require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: "u", Text: "hi"}))
	err = b.Loop.Run(context.Background(), tx)
	require.ErrorIs(t, err, middlewares.ErrCwdOutsideRoots)
	assert.False(t, engine.IsTransient(err), "the same cwd fails again: no retry")
}

// switchable is a TemplateSource whose global template a test changes,
// keeping every template it was set to.
type switchable struct{ current, first string }

func (s *switchable) Template(context.Context) (string, error) { return s.current, nil }

func (s *switchable) TemplateByHash(_ context.Context, hash string) (string, bool, error) {
	for _, t := range []string{s.current, s.first} {
		if projector.HashText(t) == hash {
			return t, true, nil
		}
	}
	return "", false, nil
}

// A compaction adopts the global template as it is then, unless the
// profile says compaction_template: original.
func TestCompactionTemplate(t *testing.T) {
	for _, tc := range []struct{ option, want string }{
		{option: "", want: "The new template."}, // "current"
		{option: "current", want: "The new template."},
		{option: "original", want: "The first template."},
	} {
		t.Run(tc.option, func(t *testing.T) {
			src := &switchable{current: "The first template.", first: "The first template."}
			set, err := profile.Parse([]byte("profiles:\n  p:\n    middlewares: [template, compaction]\n    compact_after_blocks: 10\n" +
				"    compaction_template: \"" + tc.option + "\"\n"))
			require.NoError(t, err)
			p := set["p"]
			p.Templates = src
			b, err := p.Build(slog.New(slog.DiscardHandler), nil)
			require.NoError(t, err)
			turn := projector.New("c")
			var replaced *events.SystemPromptReplaced
			for i := range 8 {
				tx := engine.NewTx(turn, fmt.Sprint("r", i))
				require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: engine.NewID(), Text: "hi"}))
				require.NoError(t, b.Loop.Run(context.Background(), tx))
				for _, e := range append(tx.Committed(), tx.Pending()...) {
					if p, ok := e.Payload.(events.SystemPromptReplaced); ok && replaced == nil {
						replaced = &p // the first rebuild
					}
				}
				src.current = "The new template."
			}
			require.NotNil(t, replaced, "a compaction rebuilt the prompt")
			assert.Equal(t, tc.want, replaced.Text)
			assert.Equal(t, projector.HashText("The first template."), replaced.PreviousTemplateHash)
			assert.Equal(t, projector.HashText(tc.want), replaced.TemplateHash)
			sp, _, _ := turn.SystemPrompt()
			assert.Equal(t, tc.want, sp.Text)
		})
	}
}
