package profile

import (
	"fmt"
	"regexp"

	"github.com/turnlog/turnlog/engine"
)

// This file holds the registry of tools: the names a profile's tools key
// may use. A program registers its own tools as it registers engines and
// middlewares, in an init function, and every command of its binary
// (cli.Main: serve, worker, chat) offers them to the profiles that name
// them. turnlog's own demo tool, word_count, registers the same way.

// validToolName is what the model sees as a tool's name, so it is what
// the providers accept (OpenAI's and Anthropic's rule): letters, digits,
// '_' and '-', at most 64. A profile's tools key names it as it is.
var validToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func init() { RegisterTool(engine.WordCount()) }

// RegisterTool makes t available to profiles' tools lists under its
// name (t.Spec.Name), so that a binary of your own built on cli.Main runs
// its tools in every command without a worker.Config of its own. Call it
// from an init function: it panics if the name is registered already,
// if t has no function, if the name is not one the providers accept
// (letters, digits, '_' and '-', at most 64), or if profiles have been
// read already.
func RegisterTool(t engine.Tool) {
	name := t.Spec.Name
	if !validToolName.MatchString(name) {
		panic(fmt.Sprintf("profile: RegisterTool(%q): a tool's name is what the model sees: letters, digits, '_' and '-', at most 64 (the providers' rule), e.g. \"acme_lookup\"", name))
	}
	if t.Func == nil {
		panic(fmt.Sprintf("profile: RegisterTool(%q) with a nil function", name))
	}
	registered.mu.Lock()
	defer registered.mu.Unlock()
	if _, dup := registered.tools[name]; dup {
		panic(fmt.Sprintf("profile: RegisterTool(%q): the name is registered already (by turnlog itself, or by an earlier call); give yours a prefix of your own, as in \"acme_%s\"", name, name))
	}
	if registered.frozen {
		panic(fmt.Sprintf("profile: RegisterTool(%q) after profiles were read: register in an init function, before cli.Main or worker.New", name))
	}
	registered.tools[name] = t
}

// Tools lists the names profiles may list as tools in this binary,
// sorted.
func Tools() []string {
	registered.mu.Lock()
	defer registered.mu.Unlock()
	return sortedKeys(registered.tools)
}

// namedTools builds the registry of the registered tools names lists.
func namedTools(names []string) (*engine.Tools, error) {
	registered.mu.Lock()
	registered.frozen = true
	tools := make([]engine.Tool, 0, len(names))
	var missing error
	for _, n := range names {
		t, ok := registered.tools[n]
		if !ok {
			missing = &NotRegisteredError{Kind: "tool", Name: n, Registered: sortedKeys(registered.tools)}
			break
		}
		tools = append(tools, t)
	}
	registered.mu.Unlock()
	if missing != nil {
		return nil, fmt.Errorf("tools: %w", missing)
	}
	return engine.NewTools(tools...)
}
