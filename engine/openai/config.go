package openai

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
)

// DefaultBaseURL is OpenAI's own endpoint, used when Config.BaseURL is
// empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Environment variables read by ConfigFromEnv. They are the names the
// OpenAI SDKs and most OpenAI-compatible tools already use, so an existing
// setup works unchanged.
const (
	EnvBaseURL = "OPENAI_BASE_URL" // API root including /v1, e.g. http://127.0.0.1:11434/v1
	EnvAPIKey  = "OPENAI_API_KEY"  // bearer token; leave unset for local servers
	EnvModel   = "OPENAI_MODEL"    // default model, e.g. gpt-4o-mini or llama3.2
)

// Config is what an Engine needs to reach a server. It is a plain struct so
// that it can be filled from flags, files or the environment; New validates
// it.
type Config struct {
	// BaseURL is the API root including the version path, e.g.
	// "https://api.openai.com/v1" (the default when empty),
	// "http://127.0.0.1:11434/v1" for Ollama. Requests go to
	// BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Empty sends no
	// Authorization header, which local servers accept. It never appears in
	// an error.
	APIKey string
	// Model is used when Input.Model is empty. If both are empty, Infer
	// fails with ErrNoModel.
	Model string
	// HTTPClient sends the requests; nil means a client without an overall
	// timeout, since a streamed answer may legitimately take minutes.
	// Bound a call with the context passed to Infer instead.
	HTTPClient *http.Client
	// Stream asks for a server-sent event stream, so that text and
	// reasoning reach the delta callback as they are generated (and usage
	// is requested with stream_options.include_usage). DefaultConfig and
	// ConfigFromEnv set it; a Config literal without it makes one blocking
	// request per call, which suits servers that cannot stream, and passes
	// the whole reasoning and text to the delta callback once, at the end.
	Stream bool
}

// DefaultConfig returns the settings an Engine should start from: OpenAI's
// endpoint and streaming on. Model and APIKey are left for the caller.
func DefaultConfig() Config {
	return Config{BaseURL: DefaultBaseURL, Stream: true}
}

// ConfigFromEnv returns DefaultConfig overridden by OPENAI_BASE_URL,
// OPENAI_API_KEY and OPENAI_MODEL when they are set and not empty. It is the
// only place this package reads the environment: New uses exactly the
// Config it is given, so a test or a second engine is never influenced by
// the process's OPENAI_* variables.
func ConfigFromEnv() Config {
	cfg := DefaultConfig()
	if v := os.Getenv(EnvBaseURL); v != "" {
		cfg.BaseURL = v
	}
	cfg.APIKey = os.Getenv(EnvAPIKey)
	cfg.Model = os.Getenv(EnvModel)
	return cfg
}

// Validate reports the first setting that cannot work, saying how to fix
// it. An empty BaseURL is valid (it means DefaultBaseURL); an empty Model is
// valid because each call may name its model.
func (c Config) Validate() error {
	if c.BaseURL == "" {
		return nil
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q is not an absolute http(s) URL; set %s to the API root, e.g. %s or http://127.0.0.1:11434/v1",
			c.BaseURL, EnvBaseURL, DefaultBaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("base URL %q has a query or fragment; set %s to the API root only, e.g. %s", c.BaseURL, EnvBaseURL, DefaultBaseURL)
	}
	return nil
}
