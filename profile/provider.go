package profile

import (
	"fmt"
	"os"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/anthropic"
	"github.com/turnlog/turnlog/engine/openai"
	"github.com/turnlog/turnlog/engine/responses"
	"github.com/turnlog/turnlog/engine/scripted"
)

// Provider names, exactly as a profile's provider key spells them: scripts
// depend on them.
const (
	ProviderScripted        = "scripted"
	ProviderOpenAI          = "openai"
	ProviderOpenAIResponses = "openai_responses"
	ProviderAnthropic       = "anthropic"
)

// Providers lists the provider names a profile accepts.
var Providers = []string{ProviderScripted, ProviderOpenAI, ProviderOpenAIResponses, ProviderAnthropic}

// validateProvider checks the provider and the keys that configure it. A
// key the provider does not read is an error rather than ignored: a
// setting that silently does nothing is a setting the user believes in.
func (p Profile) validateProvider() error {
	provider := p.Provider
	if provider == "" {
		provider = ProviderScripted
	}
	unused := func(key string, set bool, providers ...string) error {
		if !set {
			return nil
		}
		for _, f := range providers {
			if f == provider {
				return nil
			}
		}
		return fmt.Errorf("%s applies to provider %s, not %s; remove it or change the provider", key, strings.Join(providers, " and "), provider)
	}
	switch provider {
	case ProviderScripted, ProviderOpenAI, ProviderOpenAIResponses, ProviderAnthropic:
	default:
		return fmt.Errorf("provider %q: use one of %s", p.Provider, strings.Join(Providers, ", "))
	}
	for _, check := range []error{
		unused("base_url", p.BaseURL != "", ProviderOpenAI, ProviderOpenAIResponses, ProviderAnthropic),
		unused("api_key_env", p.APIKeyEnv != "", ProviderOpenAI, ProviderOpenAIResponses, ProviderAnthropic),
		unused("max_tokens", p.MaxTokens != 0, ProviderOpenAIResponses, ProviderAnthropic),
		unused("reasoning_effort", p.ReasoningEffort != "", ProviderOpenAIResponses),
		unused("reasoning_summary", p.ReasoningSummary != "", ProviderOpenAIResponses),
		unused("thinking", p.Thinking != "", ProviderAnthropic),
		unused("script", p.Script != "", ProviderScripted),
	} {
		if check != nil {
			return check
		}
	}
	if p.APIKeyEnv != "" && strings.ContainsAny(p.APIKeyEnv, "= \t") {
		return fmt.Errorf("api_key_env %q must be the NAME of an environment variable, not the key itself", p.APIKeyEnv)
	}
	// The engines' own validation, without reading the environment, so
	// that a profile file is checked the same way on every machine.
	switch provider {
	case ProviderOpenAIResponses:
		if err := p.responsesConfig(responses.Config{}).Validate(); err != nil {
			return fmt.Errorf("provider %s: %w", provider, err)
		}
	case ProviderAnthropic:
		cfg, err := p.anthropicConfig(anthropic.Config{})
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			return fmt.Errorf("provider %s: %w", provider, err)
		}
	}
	return nil
}

// newEngine makes the profile's engine. Network providers start from their
// environment variables (ConfigFromEnv) and the profile's keys override them.
func (p Profile) newEngine() (engine.Engine, error) {
	switch p.Provider {
	case ProviderOpenAI:
		cfg := openai.ConfigFromEnv()
		if p.BaseURL != "" {
			cfg.BaseURL = p.BaseURL
		}
		if p.APIKeyEnv != "" {
			cfg.APIKey = os.Getenv(p.APIKeyEnv)
		}
		if p.Model != "" {
			cfg.Model = p.Model
		}
		return openai.New(cfg)
	case ProviderOpenAIResponses:
		return responses.New(p.responsesConfig(responses.ConfigFromEnv()))
	case ProviderAnthropic:
		cfg, err := p.anthropicConfig(anthropic.ConfigFromEnv())
		if err != nil {
			return nil, err
		}
		return anthropic.New(cfg)
	}
	var script *scripted.Script
	if p.Script != "" {
		var err error
		if script, err = scripted.Load(p.Script); err != nil {
			return nil, err
		}
	}
	return scripted.New(script), nil
}

// responsesConfig is base with the profile's keys applied.
func (p Profile) responsesConfig(cfg responses.Config) responses.Config {
	if p.BaseURL != "" {
		cfg.BaseURL = p.BaseURL
	}
	if p.APIKeyEnv != "" {
		cfg.APIKey = os.Getenv(p.APIKeyEnv)
	}
	if p.Model != "" {
		cfg.Model = p.Model
	}
	cfg.MaxOutputTokens = p.MaxTokens
	cfg.ReasoningEffort = p.ReasoningEffort
	if p.ReasoningSummary != "" {
		cfg.ReasoningSummary = p.ReasoningSummary
	}
	return cfg
}

// anthropicConfig is base with the profile's keys applied.
func (p Profile) anthropicConfig(cfg anthropic.Config) (anthropic.Config, error) {
	if p.BaseURL != "" {
		cfg.BaseURL = p.BaseURL
	}
	if p.APIKeyEnv != "" {
		cfg.APIKey = os.Getenv(p.APIKeyEnv)
	}
	if p.Model != "" {
		cfg.Model = p.Model
	}
	cfg.MaxTokens = p.MaxTokens
	thinking, err := anthropic.ParseThinking(p.Thinking)
	if err != nil {
		return anthropic.Config{}, err
	}
	cfg.Thinking = thinking
	return cfg, nil
}
