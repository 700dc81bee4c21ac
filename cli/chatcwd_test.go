package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 17: `turnlog chat --cwd DIR` reaches the template's variables, and
// since 8705eda only under the worker's cwd roots: by default the
// directory `turnlog serve` runs in (the test's, this package's), else its
// --cwd-root. The recorded prompt is read back as a user would, with
// `turnlog replay`, which marks each variable's value ⟦name⟧…⟦/⟧.
func TestChatCwdReachesTheTemplate(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)

	t.Run("by default under the directory serve runs in", func(t *testing.T) {
		s := startServe(t)
		env := []string{"TURNLOG_DATA=" + s.data, "TURNLOG_NATS_URL=" + s.natsURL}
		out, code := runCmd(t, env, "", "chat", "here", "--cwd", ".", "-m", "hi")
		require.Equal(t, 0, code, out)
		out, code = runCmd(t, env, "", "replay", "here")
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "Working directory: ⟦prompt:cwd⟧"+wd+"⟦/⟧", "[prompt:cwd] of the default template is the --cwd, made absolute")

		elsewhere := t.TempDir()
		out, code = runCmd(t, env, "", "chat", "elsewhere", "--cwd", elsewhere, "-m", "hi")
		assert.Equal(t, 1, code, "the request fails: %s", out)
		assert.Contains(t, out, elsewhere, "the refusal names the cwd")
		assert.Contains(t, out, "is not under "+wd, "and the roots")
		assert.Contains(t, out, "--cwd-root", "and the setting that allows it")
	})

	t.Run("under --cwd-root", func(t *testing.T) {
		root := t.TempDir()
		project := filepath.Join(root, "project")
		require.NoError(t, os.Mkdir(project, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(project, "AGENTS.md"), []byte("Answer in one line."), 0o600))
		s := startServe(t, "--cwd-root", root)
		env := []string{"TURNLOG_DATA=" + s.data, "TURNLOG_NATS_URL=" + s.natsURL}
		out, code := runCmd(t, env, "", "chat", "project", "--cwd", project, "-m", "hi")
		require.Equal(t, 0, code, out)
		out, code = runCmd(t, env, "", "replay", "project")
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "⟦file:AGENTS.md⟧Answer in one line.⟦/⟧", "[file:AGENTS.md] is read in the --cwd")
		assert.Contains(t, out, "Working directory: ⟦prompt:cwd⟧"+project+"⟦/⟧")

		out, code = runCmd(t, env, "", "chat", "beside", "--cwd", wd, "-m", "hi")
		assert.Equal(t, 1, code, "a cwd outside --cwd-root fails: %s", out)
		assert.Contains(t, out, "is not under "+root)
	})
}
