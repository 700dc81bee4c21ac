package profile

import (
	"net/url"
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
	// Described says the engine told its defaults (WithDefaults): without
	// them, a model and base URL left unset are the engine's own choice,
	// which turnlog cannot read.
	Described bool `json:"-"`
}

// Summary is p's summary under the name name, read from the environment
// of this process for what the profile leaves to it.
func (p Profile) Summary(name string) Summary {
	s := Summary{Name: name, Provider: p.provider()}
	registered.mu.Lock()
	defaults := registered.defaults[s.Provider]
	registered.mu.Unlock()
	if defaults != nil {
		s.BaseURL, s.Model = defaults()
		s.Described = true
	}
	if p.BaseURL != "" {
		s.BaseURL = p.BaseURL
	}
	if p.Model != "" {
		s.Model = p.Model
	}
	// A credential in the URL stays on this machine: a password, or a
	// user without one, which is a token written as the user
	// (https://TOKEN@proxy/v1, sent as basic auth). The summary goes to
	// every client key, in the answer to the status ping.
	if u, err := url.Parse(s.BaseURL); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			s.BaseURL = u.Redacted()
		} else {
			u.User = url.User("xxxxx")
			s.BaseURL = u.String()
		}
	}
	return s
}

// WithDefaults tells who answers when a profile names no endpoint or
// model: defaults returns the base URL and model the engine falls back on
// (read from its environment, as its factory does). serve's banner and
// `turnlog status` show them (Summary), so a user sees which model answers
// without reading the engine's code.
func WithDefaults(defaults func() (baseURL, model string)) EngineOption {
	return func(o *engineOptions) { o.defaults = defaults }
}

// Summaries are the summaries of every profile of s, sorted by name.
func (s Set) Summaries() []Summary {
	out := make([]Summary, 0, len(s))
	for _, name := range s.Names() {
		out = append(out, s[name].Summary(name))
	}
	return out
}
