// Package profile turns a YAML description of how to answer (system prompt,
// provider, model, middlewares in order) into a runnable chain. Workers pick
// a profile per chat request; replay --rerun builds today's chain from the
// same description.
package profile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
	"go.yaml.in/yaml/v3"
)

// DefaultName is the profile a request without one uses.
const DefaultName = "default"

// SourceProfile is the systemprompt.source of the prompt the systemprompt
// middleware writes from a profile's system_prompt.
const SourceProfile = "profile"

// Profile is one way of answering chat requests.
type Profile struct {
	// SystemPrompt is the prompt the systemprompt middleware keeps in
	// place ("" and no template: none). The template middleware uses the
	// global template instead (turnlog template get|set).
	SystemPrompt string `yaml:"system_prompt,omitempty" json:"system_prompt,omitempty"`
	// Provider names the engine: one registered with RegisterEngine (see
	// Engines). turnlog's own are "scripted" (the default; deterministic,
	// no network), "openai" (any Chat Completions endpoint; see
	// OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL), "openai_responses"
	// (the OpenAI Responses API, stateless, with encrypted reasoning; same
	// variables) and "anthropic" (the Anthropic Messages API; see
	// ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_MODEL).
	Provider string `yaml:"provider,omitempty" json:"provider,omitempty"`
	// Model is passed to the provider ("" for its default).
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// BaseURL and APIKeyEnv configure the network providers; the key itself
	// never goes in the file, only the name of the variable holding it.
	BaseURL   string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// MaxTokens bounds each answer of openai_responses (max_output_tokens)
	// and anthropic (max_tokens, default 8192); 0 for the default.
	MaxTokens int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	// ReasoningEffort and ReasoningSummary set openai_responses' reasoning
	// (effort: the model's default when empty; summary: "auto" when
	// empty, "none" for none).
	ReasoningEffort  string `yaml:"reasoning_effort,omitempty" json:"reasoning_effort,omitempty"`
	ReasoningSummary string `yaml:"reasoning_summary,omitempty" json:"reasoning_summary,omitempty"`
	// Thinking switches anthropic's extended thinking on: "adaptive" or a
	// budget of tokens such as "4096"; "" or "off" for none.
	Thinking string `yaml:"thinking,omitempty" json:"thinking,omitempty"`
	// Script is a scripted-engine script file ("" for the built-in one).
	Script string `yaml:"script,omitempty" json:"script,omitempty"`
	// Middlewares in order, outermost first: names registered with
	// RegisterMiddleware (see Middlewares). turnlog's own: logging, retry,
	// trust, roles, globalprompt, systemprompt, systemprompt_append,
	// template, ordering, compaction, reasoningguard, reasoningguard_repair.
	Middlewares []string `yaml:"middlewares" json:"middlewares"`
	// Tools names the tools offered to the model: turnlog's demo tool
	// word_count, and those a program of its own registered with
	// RegisterTool (see Tools). Unset, a scripted profile is offered
	// word_count and any other none. A worker given tools of its own
	// (worker.Config.Tools) offers those instead.
	Tools []string `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Options are the settings of registered engines and middlewares of
	// your own, by the name the profile uses (see Options). A name the
	// profile does not use is an error.
	Options map[string]Options `yaml:"options,omitempty" json:"options,omitempty"`
	// GlobalPrompt is the operator prompt of the globalprompt middleware.
	GlobalPrompt string `yaml:"global_prompt,omitempty" json:"global_prompt,omitempty"`
	// PromptPolicy is what the systemprompt and template middlewares do
	// with a conversation prompt they did not write (imported, forked,
	// set by an operator or by another profile): "keep" (default) keeps
	// it as the conversation's one prompt, "replace" replaces its text in
	// place with the profile's. See middlewares.PromptPolicy.
	PromptPolicy middlewares.PromptPolicy `yaml:"prompt_policy,omitempty" json:"prompt_policy,omitempty"`
	// AllowRequestData lists the reserved data keys (see
	// middlewares.ReservedDataPrefixes: systemprompt., trust., ...) that a
	// chat request answered by this profile may set. By default none: a
	// request that sets one fails (request.failed; HTTP 400), since it
	// would change the conversation's prompt, trust or locks.
	AllowRequestData []string `yaml:"allow_request_data,omitempty" json:"allow_request_data,omitempty"`
	// Cwd is the working directory of the template middleware's variables
	// (prompt:cwd, git:, file:) for conversations whose requests send no
	// "cwd" data; "" means none.
	Cwd string `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	// CwdRoots are the directories under which a request's "cwd" data
	// must lie for the template middleware's variables to read it (see
	// middlewares.TemplatePromptConfig.CwdRoots); "/" allows any. Unset,
	// the worker's own setting applies (`--cwd-root`, by default the
	// directory the worker runs in).
	CwdRoots []string `yaml:"cwd_roots,omitempty" json:"cwd_roots,omitempty"`
	// TemplateLimits bound what the template middleware's variables read
	// and the prompt it renders (zero values: the defaults).
	TemplateLimits TemplateLimits `yaml:"template_limits,omitempty" json:"template_limits,omitempty"`
	// Templates is where the template middleware reads the global template;
	// the worker sets it to its installation's templates.Store. nil means
	// the built-in templates.Default.
	Templates middlewares.TemplateSource `yaml:"-" json:"-"`
	// Resolve computes the template middleware's variables; nil means the
	// live ones (the clock, files, git: template.Resolve). `replay --rerun`
	// sets it to answer with the values the log recorded.
	Resolve template.ResolveFunc `yaml:"-" json:"-"`
	// DenyDirs are directories the template middleware's variables never
	// read (see middlewares.TemplatePromptConfig.DenyDirs); the worker
	// sets them from its Config.
	DenyDirs []string `yaml:"-" json:"-"`
	// CompactionTemplate says which template a compaction renders the
	// template middleware's prompt from: "current" (default) adopts the
	// global template as it is then, recorded as a prompt replacement
	// naming both templates' hashes, so a corrected template reaches long
	// conversations at a moment the prompt cache is lost anyway;
	// "original" keeps the template the conversation was prompted with.
	CompactionTemplate string `yaml:"compaction_template,omitempty" json:"compaction_template,omitempty"`
	// CompactAfterBlocks is the compaction middleware's budget (default 200).
	CompactAfterBlocks int `yaml:"compact_after_blocks,omitempty" json:"compact_after_blocks,omitempty"`
	// MaxIterations bounds model calls per request (default 8).
	MaxIterations int `yaml:"max_iterations,omitempty" json:"max_iterations,omitempty"`
}

// Set is the profiles of a config file by name.
type Set map[string]Profile

// DefaultYAML is the configuration used without a config file; it is also
// the documented example of the format.
const DefaultYAML = `# turnlog profiles: how chat requests are answered.
profiles:
  default:
    provider: scripted          # deterministic, no network; or openai, openai_responses, anthropic
    model: ""                   # provider default
    # template: the global system prompt template (turnlog template get|set),
    # rendered once per conversation and again on compaction, from the global
    # template as it is then (compaction_template: original keeps the first).
    middlewares: [logging, retry, trust, template, ordering, reasoningguard, compaction]
    compact_after_blocks: 200
    max_iterations: 8
`

// LoadOption changes what Parse and Load check.
type LoadOption func(*loadOptions)

type loadOptions struct {
	chainOnly bool
}

// ChainOnly makes Parse and Load check each profile's chain (its
// middlewares, their options and the profile's other settings) and not
// its provider, which may be a name this binary does not register. It is
// for `turnlog replay --rerun`, which replays the model's recorded outputs
// instead of calling it: a binary with a team's middlewares reruns their
// profiles without linking their engine. Such a profile builds with
// BuildWithEngine only; Build fails naming the provider.
func ChainOnly() LoadOption { return func(o *loadOptions) { o.chainOnly = true } }

// Parse reads a profiles file and validates every profile in it.
func Parse(data []byte, opts ...LoadOption) (Set, error) {
	var o loadOptions
	for _, opt := range opts {
		opt(&o)
	}
	var f struct {
		Profiles Set `yaml:"profiles"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parse profiles: %w", err)
	}
	if len(f.Profiles) == 0 {
		return nil, fmt.Errorf("parse profiles: no profiles; see the format in `turnlog worker --help`")
	}
	for name, p := range f.Profiles {
		if err := p.validate(!o.chainOnly); err != nil {
			return nil, fmt.Errorf("profile %q: %w", name, err)
		}
	}
	return f.Profiles, nil
}

// Load reads a profiles file; path "" gives the default set.
func Load(path string, opts ...LoadOption) (Set, error) {
	if path == "" {
		return Parse([]byte(DefaultYAML), opts...)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load profiles: %w", err)
	}
	s, err := Parse(data, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Names lists the profiles, sorted.
func (s Set) Names() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Validate reports the first setting that cannot work: a provider or a
// middleware this binary has not registered (a *NotRegisteredError), and
// whatever the registered factories find wrong with their settings.
func (p Profile) Validate() error { return p.validate(true) }

// validate is Validate; withEngine false leaves the provider unchecked,
// for BuildWithEngine, which is given its engine.
func (p Profile) validate(withEngine bool) error {
	// The chain's names first: what a profile of your own is mostly
	// about, and all that replay --rerun runs (it replays the model).
	factories := make([]MiddlewareFactory, len(p.Middlewares))
	for i, m := range p.Middlewares {
		f, err := registered.middleware(m)
		if err != nil {
			return err
		}
		factories[i] = f
	}
	if withEngine {
		if err := p.validateProvider(); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(p.Options) {
		if name != p.provider() && !slices.Contains(p.Middlewares, name) {
			return fmt.Errorf("options: %q is neither the provider nor one of the middlewares; remove its options or list it", name)
		}
	}
	if err := p.validateTemplate(); err != nil {
		return err
	}
	if err := p.PromptPolicy.Validate(); err != nil {
		return fmt.Errorf("prompt_policy: %w", err)
	}
	if _, err := namedTools(p.Tools); err != nil {
		return err
	}
	for _, k := range p.AllowRequestData {
		if !middlewares.ReservedDataKey(k) {
			return fmt.Errorf("allow_request_data: %q is not a reserved key (%s); requests may set it anyway, remove it",
				k, strings.Join(middlewares.ReservedDataPrefixes, " "))
		}
	}
	if p.CompactAfterBlocks < 0 || p.MaxIterations < 0 {
		return fmt.Errorf("compact_after_blocks and max_iterations must not be negative")
	}
	// Last, each middleware checks its own settings.
	for i, m := range p.Middlewares {
		if _, err := factories[i](MiddlewareSpec{Name: m, Profile: p, Options: p.Options[m], Logger: slog.New(slog.DiscardHandler), CheckOnly: true}); err != nil {
			return fmt.Errorf("middleware %s: %w", m, err)
		}
	}
	return nil
}

// Built is a profile ready to run.
type Built struct {
	Engine engine.Engine
	Loop   engine.Loop
	Tools  *engine.Tools
	Model  string
	// AllowRequestData is the profile's allow_request_data.
	AllowRequestData []string
}

// CheckRequestData refuses a chat request's data that sets a reserved key
// this profile does not allow (middlewares.CheckRequestData).
func (p Profile) CheckRequestData(data map[string]string) error {
	return middlewares.CheckRequestData(data, p.AllowRequestData)
}

// Build makes the engine, the tools and the middleware chain of p.
// tools are offered to the model; nil gives the profile's tools (Tools).
func (p Profile) Build(logger *slog.Logger, tools *engine.Tools) (*Built, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	eng, err := p.newEngine()
	if err != nil {
		return nil, err
	}
	scripted := p.Provider == "" || p.Provider == "scripted"
	if tools == nil {
		// The demo tool goes with the demo engine: a real model is
		// offered no tool it was not given.
		names := p.Tools
		if names == nil && scripted {
			names = []string{"word_count"}
		}
		var err error
		if tools, err = namedTools(names); err != nil {
			return nil, err
		}
	}
	model := p.Model
	if model == "" && scripted {
		model = "scripted"
	}
	return p.assemble(eng, logger, tools, model)
}

// assemble builds the middleware chain around eng; Build and
// BuildWithEngine differ only in where the engine comes from.
func (p Profile) assemble(eng engine.Engine, logger *slog.Logger, tools *engine.Tools, model string) (*Built, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mws := make([]engine.Middleware, 0, len(p.Middlewares))
	for _, name := range p.Middlewares {
		f, err := registered.middleware(name)
		if err != nil {
			return nil, err
		}
		mw, err := f(MiddlewareSpec{Name: name, Profile: p, Options: p.Options[name], Engine: eng, Logger: logger})
		if err == nil && mw == nil {
			err = errors.New("its factory returned no middleware")
		}
		if err != nil {
			return nil, fmt.Errorf("middleware %s: %w", name, err)
		}
		mws = append(mws, mw)
	}
	return &Built{
		Engine:           eng,
		Loop:             engine.Loop{Handler: engine.Chain(eng, mws...), Tools: tools, MaxIterations: p.MaxIterations},
		Tools:            tools,
		Model:            model,
		AllowRequestData: p.AllowRequestData,
	}, nil
}
