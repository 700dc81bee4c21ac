package middlewares_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
)

// TestTemplatePromptCwdRoots: with CwdRoots set, a request's cwd outside
// them fails the request instead of letting file: read there; inside them
// (also through a link that stays inside) it is read as before.
func TestTemplatePromptCwdRoots(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	project := filepath.Join(root, "project")
	require.NoError(t, os.Mkdir(project, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(project, "NOTES"), []byte("project notes"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "NOTES"), []byte("secret notes"), 0o600))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, "escape")))
	require.NoError(t, os.Symlink(project, filepath.Join(root, "alias")))

	tests := []struct {
		name, cwd string
		want      string // the prompt; "" when the request must fail
	}{
		{"under a root", project, "project notes"},
		{"the root itself", root, "no notes"},
		{"a link that stays under the root", filepath.Join(root, "alias"), "project notes"},
		{"outside every root", elsewhere, ""},
		{"a link under the root that leads out", filepath.Join(root, "escape"), ""},
		{"dot-dot out of the root", filepath.Join(root, "..", filepath.Base(elsewhere)), ""},
		{"a sibling whose name starts like the root", root + "-other", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw := templateMW(t, middlewares.TemplatePromptConfig{
				Templates: middlewares.StaticTemplate("[if file:NOTES][file:NOTES][else]no notes[endif]"),
				CwdRoots:  []string{root},
			})
			tx := txOf(t, user("u1", "hi"))
			require.NoError(t, tx.Emit("test", events.DataSet{Values: map[string]string{middlewares.DataCwd: tc.cwd}}))
			_, evs, err := run(t, mw, tx)
			if tc.want == "" {
				require.ErrorIs(t, err, middlewares.ErrCwdOutsideRoots)
				assert.Contains(t, err.Error(), tc.cwd, "the error names the cwd")
				assert.Contains(t, err.Error(), "cwd_roots", "and the setting that allows it")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, evs[len(evs)-1].Payload.(events.SystemPromptSet).Text)
		})
	}

	t.Run("a template that reads no file is rendered", func(t *testing.T) {
		mw := templateMW(t, middlewares.TemplatePromptConfig{
			Templates: middlewares.StaticTemplate("Conversation [prompt:conversation_id]."),
			CwdRoots:  []string{root},
		})
		tx := txOf(t, user("u1", "hi"))
		require.NoError(t, tx.Emit("test", events.DataSet{Values: map[string]string{middlewares.DataCwd: elsewhere}}))
		_, evs, err := run(t, mw, tx)
		require.NoError(t, err)
		assert.Equal(t, "Conversation "+tx.Turn().Conversation+".", evs[len(evs)-1].Payload.(events.SystemPromptSet).Text)
	})

	t.Run("a rerun's recorded values are not checked", func(t *testing.T) {
		recorded := func(context.Context, []template.Ref, template.Env) (template.Values, error) {
			return template.Values{"file:NOTES": "recorded notes"}, nil
		}
		mw := templateMW(t, middlewares.TemplatePromptConfig{
			Templates: middlewares.StaticTemplate("[file:NOTES]"),
			CwdRoots:  []string{root},
			Resolve:   recorded,
		})
		tx := txOf(t, user("u1", "hi"))
		require.NoError(t, tx.Emit("test", events.DataSet{Values: map[string]string{middlewares.DataCwd: elsewhere}}))
		_, evs, err := run(t, mw, tx)
		require.NoError(t, err)
		assert.Equal(t, "recorded notes", evs[len(evs)-1].Payload.(events.SystemPromptSet).Text)
	})

	_, err := middlewares.TemplatePrompt(middlewares.TemplatePromptConfig{Templates: middlewares.StaticTemplate("x"), CwdRoots: []string{"relative"}})
	assert.ErrorContains(t, err, `CwdRoots entry "relative" is relative`)
}
