package template

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGitRunsOnlyItsFixedCommands: no template can choose what git runs.
// Only git:branch and git:status exist; any other name, however written,
// is an unknown variable and runs nothing.
func TestGitRunsOnlyItsFixedCommands(t *testing.T) {
	marks := t.TempDir()
	t.Setenv("MARKDIR", marks)
	fakeGit(t, `echo "$@" > "$MARKDIR/$$"; echo out`)
	refs := []Ref{
		{"git", "log"},
		{"git", "-c core.pager=touch /tmp/x"},
		{"git", "status; touch /tmp/x"},
		{"git", "status --porcelain"},
		{"git", "$(touch /tmp/x)"},
		{"git", "branch "},
	}
	got := mustResolve(t, context.Background(), refs, Env{Cwd: t.TempDir()})
	assert.Empty(t, got)
	ran, err := os.ReadDir(marks)
	require.NoError(t, err)
	assert.Empty(t, ran, "git was not run")

	got = mustResolve(t, context.Background(), []Ref{{"git", "status"}}, Env{Cwd: t.TempDir()})
	assert.Equal(t, Values{"git:status": "out"}, got, "the fake git works")
	ran, err = os.ReadDir(marks)
	require.NoError(t, err)
	require.Len(t, ran, 1)
	args, err := os.ReadFile(filepath.Join(marks, ran[0].Name()))
	require.NoError(t, err)
	assert.Equal(t, "--no-optional-locks -c core.fsmonitor=false status --porcelain\n", string(args))
}

// TestGitRefusesAnotherUsersRepository: a request's cwd may name any
// directory. A repository there can configure a filter that git status
// runs; git refuses a repository owned by another user than the worker's
// (safe.directory), so another local user cannot make the worker run a
// command by sending their repository as a request's cwd. The same
// repository owned by the worker's user shows the filter would run: that
// is the user's own configuration, trusted as when they run git there.
func TestGitRefusesAnotherUsersRepository(t *testing.T) {
	requireGit(t)
	if runtime.GOOS == "windows" || os.Geteuid() != 0 {
		t.Skip("needs root, to give the repository to another user")
	}
	t.Setenv("GIT_CEILING_DIRECTORIES", os.TempDir()+string(os.PathListSeparator)+filepath.Dir(t.TempDir()))
	// HOME without a .gitconfig: no safe.directory of the machine's user.
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")

	build := func(marker string) string {
		parent := t.TempDir()
		require.NoError(t, os.Chmod(parent, 0o755))
		repo := filepath.Join(parent, "repo")
		require.NoError(t, os.Mkdir(repo, 0o755))
		gitT(t, repo, "init", "-q", "-b", "main")
		require.NoError(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644))
		gitT(t, repo, "add", ".")
		gitT(t, repo, "commit", "-q", "-m", "first")
		gitT(t, repo, "config", "filter.evil.clean", "touch "+marker+"; cat")
		require.NoError(t, os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("* filter=evil\n"), 0o644))
		// Same size, another mtime: git status must read the file, through
		// the filter, to tell whether it changed.
		a := filepath.Join(repo, "a.txt")
		require.NoError(t, os.WriteFile(a, []byte("two\n"), 0o644))
		later := time.Now().Add(time.Hour)
		require.NoError(t, os.Chtimes(a, later, later))
		return repo
	}
	status := Ref{"git", "status"}

	marker := filepath.Join(t.TempDir(), "ran")
	own := build(marker)
	_, ok := mustResolve(t, context.Background(), []Ref{status}, Env{Cwd: own}).Lookup(status)
	require.True(t, ok)
	require.FileExists(t, marker, "the filter runs in the worker user's own repository: the test's setup is real")

	marker = filepath.Join(t.TempDir(), "ran")
	other := build(marker)
	out, err := exec.Command("chown", "-R", "65534:65534", other).CombinedOutput()
	require.NoError(t, err, "%s", out)
	got := mustResolve(t, context.Background(), []Ref{status, {"git", "branch"}}, Env{Cwd: other})
	assert.Empty(t, got, "git refused the repository")
	assert.NoFileExists(t, marker, "another user's filter did not run")
}

// TestGitNotInKernelDirs: git does not run with a cwd in /proc either.
func TestGitNotInKernelDirs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	marks := t.TempDir()
	t.Setenv("MARKDIR", marks)
	fakeGit(t, `touch "$MARKDIR/$$"; echo out`)
	got := mustResolve(t, context.Background(), []Ref{{"git", "status"}}, Env{Cwd: "/proc/self/cwd"})
	assert.Empty(t, got)
	ran, err := os.ReadDir(marks)
	require.NoError(t, err)
	assert.Empty(t, ran)
}
