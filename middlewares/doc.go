// Package middlewares holds the middlewares a chat backend runs around every
// model call: system prompts, a global operator prompt, section ordering,
// compaction, the reasoning guard, trust and role markers, logging and
// retries. One middleware per file, each an [engine.Middleware] built from a
// config struct with defaults and a Validate method.
//
// Two rules hold for all of them:
//
//   - Every change to the Turn goes through [engine.Tx.Emit], with the
//     middleware's name as the event's actor, so the log says who changed
//     what and replay reproduces it.
//   - A middleware with nothing to change emits no event. The chain runs
//     before every model call of every request, on the whole conversation,
//     so each middleware is idempotent: running it a second time over its own
//     result changes nothing. This is what keeps a long conversation free of
//     the duplicated system prompts and blocks that backends which re-apply
//     middlewares to a flattened history accumulate.
//
// A typical chain, outermost first:
//
//	h := engine.Chain(eng,
//		middlewares.Must(middlewares.Logging(middlewares.LoggingConfig{})),
//		middlewares.Must(middlewares.Trust(middlewares.TrustConfig{})),
//		middlewares.Must(middlewares.Roles(middlewares.RolesConfig{})),
//		middlewares.Must(middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(prompt)})),
//		middlewares.Must(middlewares.GlobalPrompt(middlewares.GlobalPromptConfig{Prompt: middlewares.StaticPrompt(policy)})),
//		middlewares.Must(middlewares.Ordering(middlewares.OrderingConfig{})),
//		middlewares.Must(middlewares.Compaction(middlewares.CompactionConfig{MaxTokens: 100_000, Summarizer: s})),
//		middlewares.Must(middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{Repair: true})),
//		middlewares.Must(middlewares.Retry(middlewares.RetryConfig{})),
//	)
//
// Put the reasoning guard after everything that removes or moves blocks, so
// that it checks the Turn exactly as the model will receive it, and Retry
// last, right before the engine, so that each attempt is one recorded
// model call.
package middlewares

import "github.com/turnlog/turnlog/engine"

// Must returns mw and panics if err is not nil. It is for chains built from
// configuration fixed at compile time (tests, examples); a chain built from
// user configuration should handle the error, which names the bad field.
func Must(mw engine.Middleware, err error) engine.Middleware {
	if err != nil {
		panic(err)
	}
	return mw
}
