package profile

import (
	"slices"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/middlewares"
)

// turnlog's own middlewares register here, through the same
// RegisterMiddleware a program's own use. They live in this package rather
// than in middlewares' init because their settings are the profile's own
// keys (system_prompt, prompt_policy, compact_after_blocks,
// template_limits, ...), which makes package profile import middlewares;
// the middlewares package stays free of profiles, usable on its own.
func init() {
	builtin("logging", func(s MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.Logging(middlewares.LoggingConfig{Logger: s.Logger})
	})
	builtin("retry", func(MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.Retry(middlewares.RetryConfig{})
	})
	builtin("trust", func(MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.Trust(middlewares.TrustConfig{})
	})
	builtin("roles", func(MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.Roles(middlewares.RolesConfig{})
	})
	builtin("globalprompt", func(s MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.GlobalPrompt(middlewares.GlobalPromptConfig{Prompt: middlewares.StaticPrompt(s.Profile.GlobalPrompt), ID: "global"})
	})
	builtin("systemprompt", func(s MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(s.Profile.SystemPrompt),
			Source: SourceProfile, Policy: s.Profile.PromptPolicy})
	})
	builtin("systemprompt_append", func(s MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.SystemPromptAppend(middlewares.SystemPromptAppendConfig{Prompt: middlewares.StaticPrompt(s.Profile.SystemPrompt), Tag: "profile"})
	})
	builtin("ordering", func(MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.Ordering(middlewares.OrderingConfig{})
	})
	builtin("compaction", func(s MiddlewareSpec) (engine.Middleware, error) {
		p := s.Profile
		n := p.CompactAfterBlocks
		if n == 0 {
			n = 200
		}
		var sum middlewares.Summarizer = &middlewares.EngineSummarizer{Engine: s.Engine, Model: p.Model}
		if slices.Contains(p.Middlewares, "template") {
			sum = middlewares.TemplateSummarizer{Engine: s.Engine, Model: p.Model}
		}
		return middlewares.Compaction(middlewares.CompactionConfig{MaxBlocks: n, Summarizer: sum})
	})
	builtin("template", func(s MiddlewareSpec) (engine.Middleware, error) {
		return s.Profile.templatePrompt()
	})
	builtin("reasoningguard", func(MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{
			Remedy: "to drop such blocks on every request, list the middleware reasoningguard_repair in place of reasoningguard in the profile's middlewares"})
	})
	builtin("reasoningguard_repair", func(MiddlewareSpec) (engine.Middleware, error) {
		return middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{Repair: true})
	})
}

// builtin registers one of turnlog's middlewares, which take no options.
func builtin(name string, f MiddlewareFactory) {
	RegisterMiddleware(name, func(s MiddlewareSpec) (engine.Middleware, error) {
		if err := s.Options.RequireNone(); err != nil {
			return nil, err
		}
		return f(s)
	})
}
