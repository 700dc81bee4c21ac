package profile

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/turnlog/turnlog/engine"
)

// This file holds the registries of engines and middlewares: the names a
// profile's provider and middlewares keys may use. It works as
// database/sql's drivers and Caddy's modules do: a package registers its
// engine or middleware by name in its init function, a program links it by
// importing the package, and a profile that names something this binary
// does not have fails when it is read, naming it. turnlog's own engines
// and middlewares register the same way (engine/openai, engine/responses,
// engine/anthropic, engine/scripted; the middlewares in builtin.go). An
// engine registers the renderings of its wire requests with it (wire.go).

// EngineFactory makes the engine of a profile whose provider is the name
// the factory was registered under. It is called with spec.CheckOnly set
// when a profiles file is read (Parse, Load), to check the profile's
// settings for the engine, and without it for every Build.
type EngineFactory func(spec EngineSpec) (engine.Engine, error)

// EngineSpec is what a profile says to the engine it names.
type EngineSpec struct {
	// Name is the name the engine was registered under.
	Name string
	// Profile is the whole profile. turnlog's engines read its model,
	// base_url, api_key_env and the other keys documented on Profile; an
	// engine of your own takes its settings from Options.
	Profile Profile
	// Options are the profile's settings under options.<Name>; Decode
	// them into a struct of your own.
	Options Options
	// CheckOnly is set when the profile is being checked, not run: the
	// factory validates its settings and returns (the engine may be nil),
	// reading no environment variable and opening nothing, so that a
	// profiles file checks the same on every machine.
	CheckOnly bool
}

// MiddlewareFactory makes a middleware that a profile's middlewares list
// names. Like EngineFactory it is called with spec.CheckOnly set when a
// profiles file is read, and without it for every Build, once per place
// the profile lists the name.
type MiddlewareFactory func(spec MiddlewareSpec) (engine.Middleware, error)

// MiddlewareSpec is what a profile says to a middleware it lists.
type MiddlewareSpec struct {
	// Name is the name the middleware was registered under.
	Name string
	// Profile is the whole profile (turnlog's own middlewares read its
	// system_prompt, prompt_policy, compact_after_blocks, ...).
	Profile Profile
	// Options are the profile's settings under options.<Name>.
	Options Options
	// Engine is the profile's engine, for a middleware that calls the
	// model itself (compaction's summariser): its calls are recorded like
	// any other when made through engine.InferAside. nil when CheckOnly.
	Engine engine.Engine
	// Logger is the worker's logger (never nil).
	Logger *slog.Logger
	// CheckOnly: see EngineSpec.CheckOnly.
	CheckOnly bool
}

// ErrNotRegistered is what a profile that names an engine or a middleware
// this binary does not have fails with (wrapped in a *NotRegisteredError).
var ErrNotRegistered = errors.New("not registered in this binary")

// NotRegisteredError names what a profile asked for and this binary lacks.
type NotRegisteredError struct {
	// Kind is "provider", "middleware" or "tool".
	Kind string
	// Name is the name the profile used.
	Name string
	// Registered are the names of that kind this binary has, sorted.
	Registered []string
}

func (e *NotRegisteredError) Error() string {
	return fmt.Sprintf("%s %q is not registered in this binary (it has %s); use one of those, or build a binary that imports the package registering %q and calls cli.Main: see docs/library.md",
		e.Kind, e.Name, strings.Join(e.Registered, ", "), e.Name)
}

// Is makes errors.Is(err, ErrNotRegistered) hold.
func (e *NotRegisteredError) Is(target error) bool { return target == ErrNotRegistered }

// registry holds the factories. Registration happens in init functions,
// before any profile is read; the first lookup freezes it, so that the set
// of names cannot change under a running worker (a name that resolved
// once resolves the same way for the life of the process).
type registry struct {
	mu          sync.Mutex
	frozen      bool
	engines     map[string]EngineFactory
	middlewares map[string]MiddlewareFactory
	tools       map[string]engine.Tool
	// wires are the engines' renderings, by version.
	wires map[string]wireRendering
	// defaults are the engines' endpoints and models when a profile
	// names none (WithDefaults), by engine name.
	defaults map[string]func() (baseURL, model string)
	// where is the file and line of each registration, by function and
	// name ("RegisterEngine acme.gpt"), for the panic of a second one.
	where map[string]string
}

var registered = &registry{engines: map[string]EngineFactory{}, middlewares: map[string]MiddlewareFactory{}, tools: map[string]engine.Tool{}, wires: map[string]wireRendering{},
	defaults: map[string]func() (string, string){}, where: map[string]string{}}

// validName is what a registered name may be: lowercase words joined by
// '.', '_' or '-', such as "acme.sysprompt". The dot is for a
// namespace of your own, so that your names never collide with turnlog's.
var validName = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*$`)

// RegisterEngine makes the engine that factory builds available to
// profiles as `provider: name`, and with WithWire the renderings of its
// wire requests to `turnlog replay --wire` and `--verify`. Call it from an
// init function: it panics if name is registered twice, if factory is nil,
// if name is not lowercase letters, digits and '.', '_', '-' (use a prefix
// of your own, as in "acme.gpt"), if profiles have been read already, or
// on a bad WithWire (see there).
func RegisterEngine(name string, factory EngineFactory, opts ...EngineOption) {
	if factory == nil {
		panic("profile: RegisterEngine " + name + " with a nil factory")
	}
	var o engineOptions
	for _, opt := range opts {
		opt(&o)
	}
	seen := map[string]bool{}
	for _, w := range o.wires {
		switch {
		case !validWireVersion.MatchString(w.version):
			panic(fmt.Sprintf("profile: RegisterEngine(%q): WithWire(%q): a rendering version is <name>/<number>, e.g. \"acme.gpt/1\"", name, w.version))
		case w.render == nil:
			panic(fmt.Sprintf("profile: RegisterEngine(%q): WithWire(%q) with a nil renderer", name, w.version))
		case seen[w.version]:
			panic(fmt.Sprintf("profile: RegisterEngine(%q): WithWire(%q) given twice", name, w.version))
		}
		seen[w.version] = true
	}
	registered.add("RegisterEngine", name,
		func() string {
			if _, dup := registered.engines[name]; dup {
				return registered.twice("RegisterEngine", name)
			}
			// A version names one rendering: two engines claiming one
			// would render each other's calls.
			for _, w := range o.wires {
				if prev, dup := registered.wires[w.version]; dup {
					return fmt.Sprintf("profile: RegisterEngine(%q): rendering %q is registered already, by engine %q; give yours a name of its own", name, w.version, prev.engine)
				}
			}
			return ""
		},
		func() {
			registered.engines[name] = factory
			if o.defaults != nil {
				registered.defaults[name] = o.defaults
			}
			for _, w := range o.wires {
				w.engine = name
				registered.wires[w.version] = w
			}
		})
}

// RegisterMiddleware makes the middleware that factory builds available
// to profiles' middlewares lists under name. It panics as RegisterEngine
// does.
func RegisterMiddleware(name string, factory MiddlewareFactory) {
	if factory == nil {
		panic("profile: RegisterMiddleware " + name + " with a nil factory")
	}
	registered.add("RegisterMiddleware", name,
		func() string {
			if _, dup := registered.middlewares[name]; dup {
				return registered.twice("RegisterMiddleware", name)
			}
			return ""
		},
		func() { registered.middlewares[name] = factory })
}

// twice is the panic of fn registering name a second time (called under
// the lock): where the first registration is, and what to do.
func (r *registry) twice(fn, name string) string {
	msg := fmt.Sprintf("profile: %s(%q): the name is registered already, by turnlog itself or an earlier call (at %s)", fn, name, r.where[fn+" "+name])
	if !strings.Contains(name, ".") {
		return msg + fmt.Sprintf("; give yours a prefix of your own, as in \"acme.%s\"", name)
	}
	return msg + "; register each name once: two packages register it, or one init registers it twice"
}

// add registers what put adds, unless conflict (called under the lock)
// says why it must not be.
func (r *registry) add(fn, name string, conflict func() string, put func()) {
	r.mu.Lock()
	defer r.mu.Unlock()

	if !validName.MatchString(name) {
		panic(fmt.Sprintf("profile: %s(%q): a name is lowercase letters and digits joined by '.', '_' or '-', e.g. \"acme.sysprompt\"", fn, name))
	}
	if msg := conflict(); msg != "" {
		panic(msg)
	}
	if r.frozen {
		panic(fmt.Sprintf("profile: %s(%q) after profiles were read: register in an init function, before cli.Main or worker.New", fn, name))
	}
	put()
	// Where fn was called from (add's caller's caller), for the panic of
	// a second call.
	if _, file, line, ok := runtime.Caller(2); ok {
		r.where[fn+" "+name] = fmt.Sprintf("%s:%d", file, line)
	}
}

// engine returns the factory registered as name.
func (r *registry) engine(name string) (EngineFactory, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen = true
	if f, ok := r.engines[name]; ok {
		return f, nil
	}
	return nil, &NotRegisteredError{Kind: "provider", Name: name, Registered: sortedKeys(r.engines)}
}

// middleware returns the factory registered as name.
func (r *registry) middleware(name string) (MiddlewareFactory, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen = true
	if f, ok := r.middlewares[name]; ok {
		return f, nil
	}
	return nil, &NotRegisteredError{Kind: "middleware", Name: name, Registered: sortedKeys(r.middlewares)}
}

// Engines lists the names profiles may use as provider in this binary,
// sorted: what `turnlog worker --help` shows.
func Engines() []string {
	registered.mu.Lock()
	defer registered.mu.Unlock()
	return sortedKeys(registered.engines)
}

// Middlewares lists the names profiles may list as middlewares in this
// binary, sorted.
func Middlewares() []string {
	registered.mu.Lock()
	defer registered.mu.Unlock()
	return sortedKeys(registered.middlewares)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
