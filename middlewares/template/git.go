package template

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// gitBranch resolves git:branch. rev-parse fails on a branch with no commit
// yet, where symbolic-ref still knows the name.
func gitBranch(ctx context.Context, env Env, _ string) (string, bool) {
	if b, ok := runGit(ctx, env, "git:branch", "rev-parse", "--abbrev-ref", "HEAD"); ok {
		return b, true
	}
	return runGit(ctx, env, "git:branch", "symbolic-ref", "--short", "HEAD")
}

// gitStatus resolves git:status.
func gitStatus(ctx context.Context, env Env, _ string) (string, bool) {
	return runGit(ctx, env, "git:status", "status", "--porcelain")
}

// gitRepoEnv are the environment variables that would make git look at
// another repository than the one containing Cwd.
var gitRepoEnv = []string{
	"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_COMMON_DIR=",
	"GIT_OBJECT_DIRECTORY=", "GIT_NAMESPACE=",
}

// runGit runs git for variable ref in env.Cwd with the git timeout and
// returns its standard
// output without the trailing newline. Output past env.maxFileBytes() is
// cut back to the last whole line and ends with the truncation note. Any
// failure (no Cwd, a Cwd under /proc, /sys or /dev, git missing, not a
// repository, timeout) means "does not exist".
//
// Neither the template nor the request chooses what runs: the only
// commands are the fixed ones of git:branch and git:status, with no
// argument taken from either; the request's cwd decides only where. In that
// directory the repository's own configuration is trusted, as when the user
// runs git there (a repository can configure filters that git status runs),
// which is why git itself refuses a repository owned by another user than
// the worker's (its safe.directory check, git 2.35.2 and later): another
// local user cannot make the worker run their configuration by naming
// their repository as a request's cwd. core.fsmonitor is turned off, since
// it could start a long-lived process on every prompt, and optional locks,
// so a prompt never contends with the user's own git commands for the
// index lock.
func runGit(ctx context.Context, env Env, ref string, args ...string) (string, bool) {
	cwd, ok := env.workDir()
	if !ok {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, env.gitTimeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-optional-locks", "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Dir = cwd
	cmd.Env = append(withoutEnv(os.Environ(), gitRepoEnv), "GIT_TERMINAL_PROMPT=0")
	cmd.WaitDelay = 100 * time.Millisecond // do not wait on pipes held by orphaned children
	out := &capWriter{max: int(env.maxFileBytes())}
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		return "", false
	}
	b := out.buf
	if out.truncated {
		// git output is line-oriented: keep whole lines only.
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i]
		}
		b = wholeRunes(b, true)
		return strings.TrimRight(string(b), "\r\n") + truncationNote(ref, env.maxFileBytes()), true
	}
	return strings.TrimRight(string(b), "\r\n"), true
}

func withoutEnv(environ, prefixes []string) []string {
	out := make([]string, 0, len(environ))
next:
	for _, kv := range environ {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// capWriter keeps the first max bytes written and discards the rest without
// failing, so a huge output neither grows memory nor breaks the command.
type capWriter struct {
	buf       []byte
	max       int
	truncated bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.max - len(w.buf)
	if len(p) > room {
		w.truncated = true
		w.buf = append(w.buf, p[:room]...)
	} else {
		w.buf = append(w.buf, p...)
	}
	return len(p), nil
}
