package anthropic

import (
	"os"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/profile"
)

// The Messages engine is a profile's provider "anthropic" in every binary
// that imports this package, and renders its recorded requests again
// (WireVersion) for `turnlog replay --wire` and `--verify`.
func init() {
	profile.RegisterEngine(profile.ProviderAnthropic, fromProfile, profile.WithWire(WireVersion, RenderWire),
		profile.WithDefaults(func() (string, string) { c := ConfigFromEnv(); return c.BaseURL, c.Model }))
}

// fromProfile is the engine of a profile with provider: anthropic. The
// environment gives the defaults (ConfigFromEnv); the profile's keys
// override them.
func fromProfile(s profile.EngineSpec) (engine.Engine, error) {
	if err := s.Options.RequireNone(); err != nil {
		return nil, err
	}
	p := s.Profile
	cfg := DefaultConfig()
	if !s.CheckOnly {
		cfg = ConfigFromEnv()
	}
	if p.BaseURL != "" {
		cfg.BaseURL = p.BaseURL
	}
	if p.APIKeyEnv != "" && !s.CheckOnly {
		cfg.APIKey = os.Getenv(p.APIKeyEnv)
	}
	if p.Model != "" {
		cfg.Model = p.Model
	}
	cfg.MaxTokens = p.MaxTokens
	thinking, err := ParseThinking(p.Thinking)
	if err != nil {
		return nil, err
	}
	cfg.Thinking = thinking
	if s.CheckOnly {
		return nil, cfg.Validate()
	}
	return New(cfg)
}
