package profile

import (
	"net/url"

	"github.com/turnlog/turnlog/engine/anthropic"
	"github.com/turnlog/turnlog/engine/openai"
	"github.com/turnlog/turnlog/engine/responses"
)

// Summary says who answers for a profile: the provider, the model and the
// endpoint, as the engine will use them (the profile's keys over the
// provider's environment variables). serve's banner and `turnlog status`
// show it, so that a user knows whether the scripted engine or a real
// model answers, and which.
type Summary struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// Model is the model asked for when a request names none; "" when
	// neither the profile nor the environment sets one (the request
	// must then name it).
	Model string `json:"model"`
	// BaseURL is where the network providers send their calls; "" for
	// the scripted engine.
	BaseURL string `json:"base_url"`
}

// Summary is p's summary under the name name, read from the environment
// of this process for what the profile leaves to it.
func (p Profile) Summary(name string) Summary {
	s := Summary{Name: name, Provider: p.Provider}
	switch p.Provider {
	case ProviderOpenAI:
		cfg := openai.ConfigFromEnv()
		s.BaseURL, s.Model = cfg.BaseURL, cfg.Model
	case ProviderOpenAIResponses:
		cfg := responses.ConfigFromEnv()
		s.BaseURL, s.Model = cfg.BaseURL, cfg.Model
	case ProviderAnthropic:
		cfg := anthropic.ConfigFromEnv()
		s.BaseURL, s.Model = cfg.BaseURL, cfg.Model
	default:
		s.Provider, s.Model = ProviderScripted, "scripted"
	}
	if p.BaseURL != "" {
		s.BaseURL = p.BaseURL
	}
	if p.Model != "" {
		s.Model = p.Model
	}
	// A password in the URL stays on this machine.
	if u, err := url.Parse(s.BaseURL); err == nil && u.User != nil {
		s.BaseURL = u.Redacted()
	}
	return s
}

// Summaries are the summaries of every profile of s, sorted by name.
func (s Set) Summaries() []Summary {
	out := make([]Summary, 0, len(s))
	for _, name := range s.Names() {
		out = append(out, s[name].Summary(name))
	}
	return out
}
