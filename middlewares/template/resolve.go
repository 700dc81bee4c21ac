package template

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults applied by [Resolve] when the corresponding [Env] field, or the
// context deadline, is left unset.
const (
	// DefaultMaxFileBytes caps a file: variable, and git:status, so one large
	// file cannot blow up every request's prompt.
	DefaultMaxFileBytes int64 = 64 << 10
	// DefaultGitTimeout bounds each git command: a slow or locked
	// repository must not stall the request.
	DefaultGitTimeout = 2 * time.Second
	// DefaultResolveTimeout is the overall deadline of [Resolve] when its
	// context has none.
	DefaultResolveTimeout = 3 * time.Second
)

// Env is what the resolvers need to know about the conversation being
// prompted. The zero value resolves only the system: variables.
type Env struct {
	// Cwd is the conversation's working directory. Empty means git: and
	// file: variables do not exist (they never fall back to the server's own
	// directory).
	Cwd string
	// Model and ConversationID are the prompt:model and
	// prompt:conversation_id values; empty means the variable does not exist.
	Model          string
	ConversationID string
	// Now returns the current time for system:time and system:date; nil
	// means time.Now. Tests set it for deterministic output.
	Now func() time.Time
	// MaxFileBytes caps the bytes read for a file: variable and kept from
	// git:status; 0 or less means DefaultMaxFileBytes.
	MaxFileBytes int64
	// GitTimeout bounds each git command; 0 or less means DefaultGitTimeout.
	GitTimeout time.Duration
}

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

func (e Env) maxBytes() int64 {
	if e.MaxFileBytes <= 0 {
		return DefaultMaxFileBytes
	}
	return e.MaxFileBytes
}

func (e Env) gitTimeout() time.Duration {
	if e.GitTimeout <= 0 {
		return DefaultGitTimeout
	}
	return e.GitTimeout
}

// resolver computes one variable; ok false means the variable does not exist.
type resolver func(ctx context.Context, env Env, name string) (value string, ok bool)

// resolverFor returns the resolver of ref and whether it may block (I/O,
// processes); nil when the variable is unknown.
func resolverFor(ref Ref) (r resolver, blocking bool) {
	switch ref.Type {
	case "system":
		switch ref.Name {
		case "time":
			return func(_ context.Context, env Env, _ string) (string, bool) {
				return env.now().Format(time.RFC3339), true
			}, false
		case "date":
			return func(_ context.Context, env Env, _ string) (string, bool) {
				return env.now().Format(time.DateOnly), true
			}, false
		case "os":
			return func(context.Context, Env, string) (string, bool) { return runtime.GOOS, true }, false
		case "hostname":
			return func(context.Context, Env, string) (string, bool) {
				h, err := os.Hostname()
				return h, err == nil
			}, true
		}
	case "prompt":
		switch ref.Name {
		case "cwd":
			return func(_ context.Context, env Env, _ string) (string, bool) { return env.Cwd, env.Cwd != "" }, false
		case "model":
			return func(_ context.Context, env Env, _ string) (string, bool) { return env.Model, env.Model != "" }, false
		case "conversation_id":
			return func(_ context.Context, env Env, _ string) (string, bool) {
				return env.ConversationID, env.ConversationID != ""
			}, false
		}
	case "git":
		switch ref.Name {
		case "branch":
			return gitBranch, true
		case "status":
			return func(ctx context.Context, env Env, _ string) (string, bool) {
				return runGit(ctx, env, "status", "--porcelain")
			}, true
		}
	case "file":
		return func(_ context.Context, env Env, name string) (string, bool) { return readFile(env, name) }, true
	}
	return nil, false
}

// Resolve computes the values of refs for env. Unknown variables and
// variables whose resolver fails (no git, not a repository, missing file,
// path outside Cwd, ...) are absent from the result, which the template
// language treats as "does not exist".
//
// Blocking resolvers run in parallel under ONE deadline: ctx's, or
// DefaultResolveTimeout when ctx has none. When the deadline passes, Resolve
// returns at once with what has been resolved so far; the rest is absent
// (git processes are killed through the context; a stuck file read is left
// to finish in the background and its result dropped).
func Resolve(ctx context.Context, refs []Ref, env Env) Values {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultResolveTimeout)
		defer cancel()
	}
	type result struct {
		key, value string
		ok         bool
	}
	out := make(Values, len(refs))
	results := make(chan result, len(refs)) // buffered: late senders never block
	pending := 0
	seen := make(map[Ref]bool, len(refs))
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		r, blocking := resolverFor(ref)
		switch {
		case r == nil:
		case !blocking:
			if v, ok := r(ctx, env, ref.Name); ok {
				out[ref.String()] = v
			}
		default:
			pending++
			go func() {
				v, ok := r(ctx, env, ref.Name)
				results <- result{key: ref.String(), value: v, ok: ok}
			}()
		}
	}
	for ; pending > 0; pending-- {
		select {
		case res := <-results:
			if res.ok {
				out[res.key] = res.value
			}
		case <-ctx.Done():
			return out
		}
	}
	return out
}

// RenderWith parses src, resolves only the variables it refers to, and
// renders it. ok is false when the result means "no system prompt" (see
// [Template.Render]).
//
// used holds exactly the variables the rendering read and found: those
// substituted and those tested by an [if] on the path taken, not those in
// branches skipped. Callers record it with the prompt; rendering src again
// with used gives the same prompt.
func RenderWith(ctx context.Context, src string, env Env) (prompt string, used Values, ok bool) {
	r := RenderTracked(ctx, src, env, nil)
	return r.Prompt, r.Used, r.OK
}

// ResolveFunc computes the values of refs for env; [Resolve] is the one
// that reads the clock, files and git. Another one can answer from a
// record instead: `replay --rerun` renders a prompt again with the values
// the log recorded, not today's.
type ResolveFunc func(ctx context.Context, refs []Ref, env Env) Values

// Rendered is a template rendered for a prompt, with what the record of
// the prompt needs: the variables used and where their values went.
type Rendered struct {
	// Prompt, Used and OK are as RenderWith returns them.
	Prompt string
	Used   Values
	OK     bool
	// Spans are the ranges of Prompt that variables filled in (see
	// Template.RenderSpans); the rest is the template's own text.
	Spans []Span
}

// RenderTracked is RenderWith with the values from resolve (nil means
// Resolve) and the spans of the variables in the prompt.
func RenderTracked(ctx context.Context, src string, env Env, resolve ResolveFunc) Rendered {
	if resolve == nil {
		resolve = Resolve
	}
	t := Parse(src)
	rec := &recorder{from: resolve(ctx, t.Variables(), env), used: Values{}}
	prompt, spans, ok := t.RenderSpans(rec)
	return Rendered{Prompt: prompt, Used: rec.used, OK: ok, Spans: spans}
}

// recorder is a Lookup that remembers which variables were read and found.
type recorder struct {
	from Values
	used Values
}

func (r *recorder) Lookup(ref Ref) (string, bool) {
	v, ok := r.from.Lookup(ref)
	if ok {
		r.used[ref.String()] = v
	}
	return v, ok
}

// gitBranch resolves git:branch. rev-parse fails on a branch with no commit
// yet, where symbolic-ref still knows the name.
func gitBranch(ctx context.Context, env Env, _ string) (string, bool) {
	if b, ok := runGit(ctx, env, "rev-parse", "--abbrev-ref", "HEAD"); ok {
		return b, true
	}
	return runGit(ctx, env, "symbolic-ref", "--short", "HEAD")
}

// gitRepoEnv are the environment variables that would make git look at
// another repository than the one containing Cwd.
var gitRepoEnv = []string{
	"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_COMMON_DIR=",
	"GIT_OBJECT_DIRECTORY=", "GIT_NAMESPACE=",
}

// runGit runs git in env.Cwd with the git timeout and returns its standard
// output without the trailing newline, capped at env.maxBytes() and then cut
// back to the last whole line. Any failure
// (no Cwd, git missing, not a repository, timeout) means "does not exist".
//
// The repository's own configuration is trusted, as when the user runs git
// there, except core.fsmonitor, which could start a long-lived process on
// every prompt; optional locks are disabled so a prompt never contends with
// the user's own git commands for the index lock.
func runGit(ctx context.Context, env Env, args ...string) (string, bool) {
	if env.Cwd == "" {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, env.gitTimeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-optional-locks", "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Dir = env.Cwd
	cmd.Env = append(withoutEnv(os.Environ(), gitRepoEnv), "GIT_TERMINAL_PROMPT=0")
	cmd.WaitDelay = 100 * time.Millisecond // do not wait on pipes held by orphaned children
	out := &capWriter{max: int(env.maxBytes())}
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

// readFile resolves file:<name>. It reads through an os.Root opened on Cwd,
// which refuses any path that leaves it: ".." escapes, and symbolic links
// pointing outside (or absolute symbolic links, even to inside). An
// absolute name is accepted only when it lies lexically inside Cwd. Only
// regular files are read (not directories, devices or FIFOs, which could
// block). A file longer than the limit is truncated to it, cut back to a
// whole UTF-8 character.
func readFile(env Env, name string) (string, bool) {
	if env.Cwd == "" {
		return "", false
	}
	cwd, err := filepath.Abs(env.Cwd)
	if err != nil {
		return "", false
	}
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(cwd, name)
		if err != nil || !filepath.IsLocal(rel) {
			return "", false
		}
		name = rel
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return "", false
	}
	defer root.Close()
	info, err := root.Stat(name)
	if err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	f, err := root.Open(name)
	if err != nil {
		return "", false
	}
	defer f.Close()
	limit := env.maxBytes()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", false
	}
	truncated := int64(len(b)) > limit
	if truncated {
		b = b[:limit]
	}
	return string(wholeRunes(b, truncated)), true
}

// wholeRunes drops a UTF-8 character cut in half at the end of b when b was
// truncated, so the limit never produces an invalid trailing byte sequence.
func wholeRunes(b []byte, truncated bool) []byte {
	if !truncated {
		return b
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
