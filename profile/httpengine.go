package profile

import (
	"os"

	"github.com/turnlog/turnlog/engine"
)

// HTTPEngine is how a provider that reaches a model over HTTP (base URL,
// API key, model) is made from a profile, so that turnlog's HTTP engines
// (engine/openai, engine/responses, engine/anthropic) read the profile's
// common keys the same way: the environment gives the defaults (FromEnv),
// base_url, api_key_env and model override them, and a check (CheckOnly)
// neither reads the environment nor makes an engine. C is the engine's
// Config.
type HTTPEngine[C interface{ Validate() error }] struct {
	// Defaults is the Config a check starts from (no environment read).
	Defaults func() C
	// FromEnv is the Config an engine starts from: Defaults overridden by
	// the provider's environment variables.
	FromEnv func() C
	// Endpoint points at the Config's base URL, API key and model.
	Endpoint func(cfg *C) (baseURL, apiKey, model *string)
	// Own applies the profile keys only this provider reads (max_tokens,
	// thinking, ...); nil when there are none. Its error is the profile's.
	Own func(p Profile, cfg *C) error
	// New makes the engine of a Config.
	New func(cfg C) (engine.Engine, error)
}

// Factory is the EngineFactory of the provider: it refuses options (an
// HTTP engine takes its settings from the profile's own keys), builds the
// Config and, for a check, only validates it.
func (h HTTPEngine[C]) Factory(s EngineSpec) (engine.Engine, error) {
	if err := s.Options.RequireNone(); err != nil {
		return nil, err
	}
	p := s.Profile
	cfg := h.Defaults()
	if !s.CheckOnly {
		cfg = h.FromEnv()
	}
	baseURL, apiKey, model := h.Endpoint(&cfg)
	if p.BaseURL != "" {
		*baseURL = p.BaseURL
	}
	if p.APIKeyEnv != "" && !s.CheckOnly {
		*apiKey = os.Getenv(p.APIKeyEnv)
	}
	if p.Model != "" {
		*model = p.Model
	}
	if h.Own != nil {
		if err := h.Own(p, &cfg); err != nil {
			return nil, err
		}
	}
	if s.CheckOnly {
		return nil, cfg.Validate()
	}
	return h.New(cfg)
}

// Register registers the provider under name with its Factory, the base
// URL and model the environment gives (WithDefaults, for `turnlog
// profile show`) and opts (its wire renderers).
func (h HTTPEngine[C]) Register(name string, opts ...EngineOption) {
	defaults := WithDefaults(func() (string, string) {
		cfg := h.FromEnv()
		baseURL, _, model := h.Endpoint(&cfg)
		return *baseURL, *model
	})
	RegisterEngine(name, h.Factory, append([]EngineOption{defaults}, opts...)...)
}
