package responses

import (
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/profile"
)

// The Responses engine is a profile's provider "openai_responses" in
// every binary that imports this package, and renders its recorded
// requests again (WireVersion) for `turnlog replay --wire` and `--verify`.
// Besides the keys every HTTP engine reads it takes max_tokens,
// reasoning_effort and reasoning_summary.
func init() {
	profile.HTTPEngine[Config]{
		Defaults: DefaultConfig,
		FromEnv:  ConfigFromEnv,
		Endpoint: func(c *Config) (*string, *string, *string) { return &c.BaseURL, &c.APIKey, &c.Model },
		Own:      ownKeys,
		New:      func(c Config) (engine.Engine, error) { return New(c) },
	}.Register(profile.ProviderOpenAIResponses, profile.WithWire(WireVersion, RenderWire))
}

// ownKeys applies the profile keys only this provider reads.
func ownKeys(p profile.Profile, cfg *Config) error {
	cfg.MaxOutputTokens = p.MaxTokens
	cfg.ReasoningEffort = p.ReasoningEffort
	if p.ReasoningSummary != "" {
		cfg.ReasoningSummary = p.ReasoningSummary
	}
	return nil
}
