package template

import (
	"context"
	"os"
	"runtime"
	"sync"
	"time"
)

// Defaults applied by [Resolve] when the corresponding [Env] field, or the
// context deadline, is left unset.
const (
	// DefaultMaxFileBytes caps a file: variable, and git:status, so one large
	// file cannot blow up every request's prompt. A longer value is cut and
	// ends with a truncation note.
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
	// MaxPromptBytes caps the rendered prompt, and the values of the
	// template's variables together; 0 or less means
	// DefaultMaxPromptBytes. Reaching it is an error ([ErrTooLarge]).
	MaxPromptBytes int64
	// GitTimeout bounds each git command; 0 or less means DefaultGitTimeout.
	GitTimeout time.Duration
	// DenyDirs are absolute directories whose files no file: variable
	// reads and in which no git: command runs, whatever path leads there
	// (a symbolic link, a name with a directory, a working directory above
	// them): the installation's secrets, such as the NATS keys and the
	// HTTP token in <data>/auth/.
	DenyDirs []string
}

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

func (e Env) maxFileBytes() int64 {
	if e.MaxFileBytes <= 0 {
		return DefaultMaxFileBytes
	}
	return e.MaxFileBytes
}

func (e Env) maxPromptBytes() int64 {
	if e.MaxPromptBytes <= 0 {
		return DefaultMaxPromptBytes
	}
	return e.MaxPromptBytes
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
			return gitStatus, true
		}
	case "file":
		return func(_ context.Context, env Env, name string) (string, bool) { return readFile(env, name) }, true
	}
	return nil, false
}

// resolveWorkers is how many blocking resolvers run at once: enough for
// git:branch and git:status to run together, few enough that a template
// naming thousands of files reads them a handful at a time, so memory
// stays within the budget plus resolveWorkers files.
const resolveWorkers = 4

// Resolve computes the values of refs for env. Unknown variables and
// variables whose resolver fails (no git, not a repository, missing file,
// path outside Cwd or in /proc, ...) are absent from the result, which the
// template language treats as "does not exist".
//
// The values together may not exceed env's prompt cap (MaxPromptBytes):
// past it Resolve stops and returns a [*LimitError] naming the variable,
// whatever the template, so that memory stays bounded even for a template
// naming thousands of files.
//
// Blocking resolvers run in parallel (a few at a time) under ONE deadline:
// ctx's, or DefaultResolveTimeout when ctx has none. When the deadline
// passes, Resolve returns at once with what has been resolved so far; the
// rest is absent (git processes are killed through the context; a stuck
// file read is left to finish in the background and its result dropped).
func Resolve(ctx context.Context, refs []Ref, env Env) (Values, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultResolveTimeout)
		defer cancel()
	}
	// Cancelled on return: stops the workers when the budget is reached
	// or the deadline passed, and frees those waiting to hand a value.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		ref Ref
		r   resolver
	}
	type result struct {
		ref   Ref
		value string
		ok    bool
	}
	budget := env.maxPromptBytes()
	var total int64
	out := Values{}
	add := func(ref Ref, v string) error {
		if total += int64(len(v)); total > budget {
			return &LimitError{Limit: budget, At: "[" + ref.String() + "]"}
		}
		out[ref.String()] = v
		return nil
	}
	var jobs []job
	seen := make(map[Ref]bool)
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
				if err := add(ref, v); err != nil {
					return nil, err
				}
			}
		default:
			jobs = append(jobs, job{ref: ref, r: r})
		}
	}
	if len(jobs) == 0 {
		return out, nil
	}
	// Unbuffered: a worker holds at most one value until it is counted,
	// so no more than resolveWorkers values wait beyond the budget.
	todo := make(chan job)
	results := make(chan result)
	go func() {
		defer close(todo)
		for _, j := range jobs {
			select {
			case todo <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range min(resolveWorkers, len(jobs)) {
		wg.Go(func() {
			for j := range todo {
				v, ok := j.r(ctx, env, j.ref.Name)
				select {
				case results <- result{ref: j.ref, value: v, ok: ok}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(results) }()
	for {
		select {
		case res, more := <-results:
			if !more {
				return out, nil
			}
			if !res.ok {
				continue
			}
			if err := add(res.ref, res.value); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return out, nil
		}
	}
}

// RenderWith parses src, resolves only the variables it refers to, and
// renders it, within env's prompt cap. ok is false when the result means
// "no system prompt" (see [Template.Render]).
//
// used holds exactly the variables the rendering read and found: those
// substituted and those tested by an [if] on the path taken, not those in
// branches skipped. Callers record it with the prompt; rendering src again
// with used gives the same prompt.
//
// err is a [*LimitError] (errors.Is [ErrTooLarge]) when the variables'
// values or the rendered prompt reach the cap (env.MaxPromptBytes); there
// is no other error.
func RenderWith(ctx context.Context, src string, env Env) (prompt string, used Values, ok bool, err error) {
	r, err := RenderTracked(ctx, src, env, nil)
	return r.Prompt, r.Used, r.OK, err
}

// ResolveFunc computes the values of refs for env; [Resolve] is the one
// that reads the clock, files and git. Another one can answer from a
// record instead: `replay --rerun` renders a prompt again with the values
// the log recorded, not today's. Its error is a [*LimitError] when the
// values reach the cap.
type ResolveFunc func(ctx context.Context, refs []Ref, env Env) (Values, error)

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
// Resolve) and the spans of the variables in the prompt. Its error is
// RenderWith's: a [*LimitError] at the cap, and nothing is rendered.
func RenderTracked(ctx context.Context, src string, env Env, resolve ResolveFunc) (Rendered, error) {
	if resolve == nil {
		resolve = Resolve
	}
	t := Parse(src)
	values, err := resolve(ctx, t.Variables(), env)
	if err != nil {
		return Rendered{}, err
	}
	rec := &recorder{from: values, used: Values{}}
	prompt, spans, ok, err := t.RenderSpansLimit(rec, env.maxPromptBytes())
	if err != nil {
		return Rendered{}, err
	}
	return Rendered{Prompt: prompt, Used: rec.used, OK: ok, Spans: spans}, nil
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
