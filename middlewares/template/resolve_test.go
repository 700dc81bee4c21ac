package template

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var fixedNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))

// mustResolve is Resolve for refs whose values stay under the cap.
func mustResolve(t *testing.T, ctx context.Context, refs []Ref, env Env) Values {
	t.Helper()
	v, err := Resolve(ctx, refs, env)
	require.NoError(t, err)
	return v
}

func TestResolveSystemAndPrompt(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	full := Env{Cwd: "/some/dir", Model: "m-1", ConversationID: "c-1", Now: func() time.Time { return fixedNow }}
	tests := []struct {
		name    string
		ref     Ref
		env     Env
		want    string
		present bool
	}{
		{name: "time is RFC 3339", ref: Ref{"system", "time"}, env: full, want: "2025-03-04T05:06:07+01:00", present: true},
		{name: "date", ref: Ref{"system", "date"}, env: full, want: "2025-03-04", present: true},
		{name: "os", ref: Ref{"system", "os"}, env: full, want: runtime.GOOS, present: true},
		{name: "hostname", ref: Ref{"system", "hostname"}, env: full, want: host, present: true},
		{name: "cwd", ref: Ref{"prompt", "cwd"}, env: full, want: "/some/dir", present: true},
		{name: "model", ref: Ref{"prompt", "model"}, env: full, want: "m-1", present: true},
		{name: "conversation id", ref: Ref{"prompt", "conversation_id"}, env: full, want: "c-1", present: true},
		{name: "empty cwd is absent", ref: Ref{"prompt", "cwd"}, env: Env{}},
		{name: "empty model is absent", ref: Ref{"prompt", "model"}, env: Env{}},
		{name: "empty conversation id is absent", ref: Ref{"prompt", "conversation_id"}, env: Env{}},
		{name: "unknown system name", ref: Ref{"system", "nope"}, env: full},
		{name: "unknown type", ref: Ref{"nope", "time"}, env: full},
		{name: "git without cwd is absent", ref: Ref{"git", "branch"}, env: Env{}},
		{name: "file without cwd is absent", ref: Ref{"file", "a.txt"}, env: Env{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mustResolve(t, context.Background(), []Ref{tc.ref}, tc.env).Lookup(tc.ref)
			assert.Equal(t, tc.present, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestResolveDefaultNowIsCurrent(t *testing.T) {
	ref := Ref{"system", "time"}
	v, ok := mustResolve(t, context.Background(), []Ref{ref}, Env{}).Lookup(ref)
	require.True(t, ok)
	got, err := time.Parse(time.RFC3339, v)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), got, time.Minute)
}

func TestResolveDeduplicates(t *testing.T) {
	ref := Ref{"system", "os"}
	got := mustResolve(t, context.Background(), []Ref{ref, ref, ref}, Env{})
	assert.Equal(t, Values{"system:os": runtime.GOOS}, got)
}

// fileTree builds parent/{secret.txt, cwd/...} and returns the cwd and the
// secret's absolute path.
func fileTree(t *testing.T) (cwd, secret string) {
	t.Helper()
	parent := t.TempDir()
	cwd = filepath.Join(parent, "cwd")
	secret = filepath.Join(parent, "secret.txt")
	files := map[string]string{
		secret:                                   "TOP SECRET",
		filepath.Join(cwd, "a.txt"):              "hello\n",
		filepath.Join(cwd, "docs", "a b.md"):     "spaced",
		filepath.Join(cwd, "empty.txt"):          "",
		filepath.Join(cwd, "big.txt"):            strings.Repeat("x", 100),
		filepath.Join(cwd, "utf8.txt"):           "aé", // 'é' is two bytes
		filepath.Join(cwd, "docs", "nested.txt"): "nested",
	}
	for path, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	if runtime.GOOS != "windows" {
		require.NoError(t, os.Symlink("../secret.txt", filepath.Join(cwd, "link-out")))
		require.NoError(t, os.Symlink(secret, filepath.Join(cwd, "abs-link-out")))
		require.NoError(t, os.Symlink("a.txt", filepath.Join(cwd, "link-in")))
		require.NoError(t, os.Symlink(filepath.Join(cwd, "a.txt"), filepath.Join(cwd, "abs-link-in")))
		require.NoError(t, os.Symlink("..", filepath.Join(cwd, "docs", "up")))
	}
	return cwd, secret
}

func TestResolveFile(t *testing.T) {
	cwd, secret := fileTree(t)
	tests := []struct {
		name     string
		path     string
		env      Env
		want     string
		present  bool
		symlinks bool
	}{
		{name: "relative file", path: "a.txt", want: "hello\n", present: true},
		{name: "name with space", path: "docs/a b.md", want: "spaced", present: true},
		{name: "dot segments inside cwd", path: "docs/../a.txt", want: "hello\n", present: true},
		{name: "empty file exists", path: "empty.txt", want: "", present: true},
		{name: "missing file", path: "nope.txt"},
		{name: "directory", path: "docs"},
		{name: "cwd itself", path: "."},
		{name: "dot-dot escape", path: "../secret.txt"},
		{name: "deep dot-dot escape", path: "docs/../../secret.txt"},
		{name: "absolute path outside cwd", path: secret},
		{name: "absolute path inside cwd", path: filepath.Join(cwd, "a.txt"), want: "hello\n", present: true},
		{name: "symlink to a file outside", path: "link-out", symlinks: true},
		{name: "absolute symlink to a file outside", path: "abs-link-out", symlinks: true},
		{name: "symlink directory leading outside", path: "docs/up/secret.txt", symlinks: true},
		{name: "symlink inside cwd", path: "link-in", want: "hello\n", present: true, symlinks: true},
		{name: "absolute symlink is refused even inside cwd", path: "abs-link-in", symlinks: true},
		{name: "big file truncated, and says so", path: "big.txt", env: Env{MaxFileBytes: 10}, want: strings.Repeat("x", 10) + "\n[truncated by turnlog: file:big.txt is longer than 10 bytes]", present: true},
		{name: "file at the limit is whole", path: "big.txt", env: Env{MaxFileBytes: 100}, want: strings.Repeat("x", 100), present: true},
		{name: "truncation keeps whole characters", path: "utf8.txt", env: Env{MaxFileBytes: 2}, want: "a\n[truncated by turnlog: file:utf8.txt is longer than 2 bytes]", present: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.symlinks && runtime.GOOS == "windows" {
				t.Skip("symlinks need privileges on windows")
			}
			env := tc.env
			env.Cwd = cwd
			ref := Ref{"file", tc.path}
			got, ok := mustResolve(t, context.Background(), []Ref{ref}, env).Lookup(ref)
			assert.Equal(t, tc.present, ok)
			assert.Equal(t, tc.want, got)
			assert.NotContains(t, got, "SECRET")
		})
	}
}

func TestResolveFileRelativeCwd(t *testing.T) {
	cwd, _ := fileTree(t)
	t.Chdir(filepath.Dir(cwd))
	ref := Ref{"file", "a.txt"}
	got, ok := mustResolve(t, context.Background(), []Ref{ref}, Env{Cwd: "cwd"}).Lookup(ref)
	assert.True(t, ok)
	assert.Equal(t, "hello\n", got)
}

// gitT runs git for test setup, isolated from the user's configuration.
func gitT(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{
		"-c", "user.email=test@example.com", "-c", "user.name=Test", "-c", "commit.gpgsign=false",
	}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: git:branch and git:status cannot be tested")
	}
}

func TestResolveGit(t *testing.T) {
	requireGit(t)
	// Keep git from finding a repository above the temp directories.
	t.Setenv("GIT_CEILING_DIRECTORIES", os.TempDir()+string(os.PathListSeparator)+filepath.Dir(t.TempDir()))

	repo := t.TempDir()
	gitT(t, repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(repo, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "sub", "b.txt"), []byte("b\n"), 0o644))
	gitT(t, repo, "add", ".")
	gitT(t, repo, "commit", "-q", "-m", "first")

	dirty := t.TempDir()
	gitT(t, dirty, "init", "-q", "-b", "feature/x")
	require.NoError(t, os.WriteFile(filepath.Join(dirty, "a.txt"), []byte("one\n"), 0o644))
	gitT(t, dirty, "add", ".")
	gitT(t, dirty, "commit", "-q", "-m", "first")
	require.NoError(t, os.WriteFile(filepath.Join(dirty, "a.txt"), []byte("two\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dirty, "new.txt"), []byte("new\n"), 0o644))

	unborn := t.TempDir()
	gitT(t, unborn, "init", "-q", "-b", "trunk")

	plain := t.TempDir()

	branch, status := Ref{"git", "branch"}, Ref{"git", "status"}
	tests := []struct {
		name       string
		cwd        string
		wantValues Values
	}{
		{name: "clean repository", cwd: repo, wantValues: Values{"git:branch": "main", "git:status": ""}},
		{name: "subdirectory of a repository", cwd: filepath.Join(repo, "sub"), wantValues: Values{"git:branch": "main", "git:status": ""}},
		{name: "dirty repository", cwd: dirty, wantValues: Values{"git:branch": "feature/x", "git:status": " M a.txt\n?? new.txt"}},
		{name: "branch without commits", cwd: unborn, wantValues: Values{"git:branch": "trunk", "git:status": ""}},
		{name: "not a repository", cwd: plain, wantValues: Values{}},
		{name: "missing directory", cwd: filepath.Join(plain, "nope"), wantValues: Values{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustResolve(t, context.Background(), []Ref{branch, status}, Env{Cwd: tc.cwd})
			assert.Equal(t, tc.wantValues, got)
		})
	}
}

func TestResolveGitStatusCapped(t *testing.T) {
	requireGit(t)
	repo := t.TempDir()
	gitT(t, repo, "init", "-q", "-b", "main")
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), nil, 0o644))
	}
	ref := Ref{"git", "status"}
	got, ok := mustResolve(t, context.Background(), []Ref{ref}, Env{Cwd: repo, MaxFileBytes: 12}).Lookup(ref)
	require.True(t, ok)
	// 12 bytes kept, cut back to whole lines, and a note
	assert.Equal(t, "?? a.txt\n[truncated by turnlog: git:status is longer than 12 bytes]", got)
}

// fakeGit puts a shell script named git first on PATH.
func fakeGit(t *testing.T, script string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake git is a shell script")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "git"), []byte("#!/bin/sh\n"+script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestResolveInParallel proves without timing that git:branch and
// git:status run at the same time: each fake git waits until the other has
// started, so run one after the other both would fail.
func TestResolveInParallel(t *testing.T) {
	marks := t.TempDir()
	t.Setenv("MARKDIR", marks)
	fakeGit(t, `touch "$MARKDIR/$$"
i=0
while [ "$(ls "$MARKDIR" | wc -l)" -lt 2 ]; do
	i=$((i+1)); [ "$i" -gt 200 ] && exit 1
	sleep 0.05
done
echo together
`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := mustResolve(t, ctx, []Ref{{"git", "branch"}, {"git", "status"}, {"system", "os"}}, Env{Cwd: t.TempDir()})
	assert.Equal(t, Values{"git:branch": "together", "git:status": "together", "system:os": runtime.GOOS}, got)
}

// TestResolveDeadline checks that a hanging resolver cannot hold the prompt
// beyond the single deadline: Resolve returns with what it has.
func TestResolveDeadline(t *testing.T) {
	fakeGit(t, "exec sleep 30\n")
	refs := []Ref{{"git", "branch"}, {"git", "status"}, {"system", "os"}}
	want := Values{"system:os": runtime.GOOS}
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		env     Env
		maxWait time.Duration
	}{
		{
			name: "context deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			},
			env:     Env{GitTimeout: time.Minute},
			maxWait: 5 * time.Second,
		},
		{
			name: "already cancelled context",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			env:     Env{GitTimeout: time.Minute},
			maxWait: 5 * time.Second,
		},
		{
			name:    "git timeout",
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			env:     Env{GitTimeout: 100 * time.Millisecond},
			maxWait: 5 * time.Second,
		},
		{
			name:    "default overall timeout when the context has no deadline",
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			env:     Env{GitTimeout: time.Minute},
			maxWait: DefaultResolveTimeout + 5*time.Second,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			env := tc.env
			env.Cwd = t.TempDir()
			start := time.Now()
			got := mustResolve(t, ctx, refs, env)
			assert.Less(t, time.Since(start), tc.maxWait, "Resolve must not wait for the hanging git")
			assert.Equal(t, want, got)
		})
	}
}

func TestRenderWith(t *testing.T) {
	cwd, _ := fileTree(t)
	env := Env{Cwd: cwd, Model: "m-1", Now: func() time.Time { return fixedNow }}
	tests := []struct {
		name     string
		src      string
		wantText string
		wantUsed Values
		wantOK   bool
	}{
		{
			name:     "substituted and tested values are recorded, skipped ones are not",
			src:      "Model [prompt:model] on [system:date].\n[if file:a.txt]A: [file:a.txt][else][file:docs/a b.md][endif][if !prompt:conversation_id] no id[endif]",
			wantText: "Model m-1 on 2025-03-04.\nA: hello\n no id",
			wantUsed: Values{"prompt:model": "m-1", "system:date": "2025-03-04", "file:a.txt": "hello\n"},
			wantOK:   true,
		},
		{
			name:     "escape attempt renders empty",
			src:      "x[file:../secret.txt]y",
			wantText: "xy",
			wantUsed: Values{},
			wantOK:   true,
		},
		{
			name:     "empty template is no prompt",
			src:      "",
			wantText: "",
			wantUsed: Values{},
		},
		{
			name:     "blank result is no prompt",
			src:      "[if !prompt:model]unused[endif]\n[file:empty.txt]\n",
			wantText: "",
			wantUsed: Values{"prompt:model": "m-1", "file:empty.txt": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, used, ok, err := RenderWith(context.Background(), tc.src, env)
			require.NoError(t, err)
			assert.Equal(t, tc.wantText, text)
			assert.Equal(t, tc.wantUsed, used)
			assert.Equal(t, tc.wantOK, ok)

			again, againOK := Parse(tc.src).Render(used)
			assert.Equal(t, text, again, "rendering with the recorded values must reproduce the prompt")
			assert.Equal(t, ok, againOK)
		})
	}
}

func TestCatalog(t *testing.T) {
	catalog := Catalog()
	seen := map[string]bool{}
	for _, v := range catalog {
		t.Run(v.Ref, func(t *testing.T) {
			assert.False(t, seen[v.Ref], "duplicate %s", v.Ref)
			seen[v.Ref] = true
			assert.NotEmpty(t, v.Description)
			tpl := Parse("[" + v.Ref + "]")
			refs := tpl.Variables()
			require.Len(t, refs, 1, "catalog name must be valid template syntax")
			r, _ := resolverFor(refs[0])
			assert.NotNil(t, r, "catalog lists a variable no resolver knows")
			assert.Equal(t, v.Dynamic, refs[0].Type == "file")
		})
	}
	assert.Len(t, catalog, 10)

	catalog[0].Ref = "changed"
	assert.Equal(t, "system:time", Catalog()[0].Ref, "Catalog must return a fresh slice")
}

func TestVariableJSON(t *testing.T) {
	b, err := json.Marshal(Variable{Ref: "file:<path>", Description: "d", Dynamic: true})
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"file:<path>","description":"d","dynamic":true}`, string(b))
}
