package openai

import (
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/profile"
)

// The Chat Completions engine is a profile's provider "openai" in every
// binary that imports this package, and renders its recorded requests
// again (WireVersion) for `turnlog replay --wire` and `--verify`. It reads
// only the keys every HTTP engine reads (base_url, api_key_env, model).
func init() {
	profile.HTTPEngine[Config]{
		Defaults: DefaultConfig,
		FromEnv:  ConfigFromEnv,
		Endpoint: func(c *Config) (*string, *string, *string) { return &c.BaseURL, &c.APIKey, &c.Model },
		New:      func(c Config) (engine.Engine, error) { return New(c) },
	}.Register(profile.ProviderOpenAI, profile.WithWire(WireVersion, RenderWire))
}
