package anthropic

import (
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/profile"
)

// The Messages engine is a profile's provider "anthropic" in every binary
// that imports this package, and renders its recorded requests again
// (WireVersion) for `turnlog replay --wire` and `--verify`. Besides the
// keys every HTTP engine reads it takes max_tokens and thinking.
func init() {
	profile.HTTPEngine[Config]{
		Defaults: DefaultConfig,
		FromEnv:  ConfigFromEnv,
		Endpoint: func(c *Config) (*string, *string, *string) { return &c.BaseURL, &c.APIKey, &c.Model },
		Own:      ownKeys,
		New:      func(c Config) (engine.Engine, error) { return New(c) },
	}.Register(profile.ProviderAnthropic, profile.WithWire(WireVersion, RenderWire))
}

// ownKeys applies the profile keys only this provider reads.
func ownKeys(p profile.Profile, cfg *Config) error {
	cfg.MaxTokens = p.MaxTokens
	thinking, err := ParseThinking(p.Thinking)
	if err != nil {
		return err
	}
	cfg.Thinking = thinking
	return nil
}
