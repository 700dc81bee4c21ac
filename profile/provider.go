package profile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/engine"
)

// Names of turnlog's own engines, exactly as a profile's provider key
// spells them: scripts depend on them. Each is registered by its package
// (engine/scripted, engine/openai, engine/responses, engine/anthropic),
// so a binary has the ones it imports; engine/builtin imports them all.
const (
	ProviderScripted        = "scripted"
	ProviderOpenAI          = "openai"
	ProviderOpenAIResponses = "openai_responses"
	ProviderAnthropic       = "anthropic"
)

// ProviderName is the name of the profile's engine: Provider, or
// "scripted" (ProviderScripted) when the profile names none.
func (p Profile) ProviderName() string { return p.provider() }

// provider is the profile's provider, the default filled in.
func (p Profile) provider() string {
	if p.Provider == "" {
		return ProviderScripted
	}
	return p.Provider
}

// validateProvider checks the provider and the keys that configure it. A
// key the provider does not read is an error rather than ignored: a
// setting that silently does nothing is a setting the user believes in.
// The engine's factory then checks its own settings (CheckOnly).
func (p Profile) validateProvider() error {
	provider := p.provider()
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
	factory, err := registered.engine(provider)
	if err != nil {
		return err
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
	if _, err := factory(EngineSpec{Name: provider, Profile: p, Options: p.Options[provider], CheckOnly: true}); err != nil {
		return fmt.Errorf("provider %s: %w", provider, err)
	}
	return nil
}

// newEngine makes the profile's engine with the factory registered under
// its provider.
func (p Profile) newEngine() (engine.Engine, error) {
	provider := p.provider()
	factory, err := registered.engine(provider)
	if err != nil {
		return nil, err
	}
	eng, err := factory(EngineSpec{Name: provider, Profile: p, Options: p.Options[provider]})
	if err == nil && eng == nil {
		err = errors.New("its factory returned no engine")
	}
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", provider, err)
	}
	return eng, nil
}
