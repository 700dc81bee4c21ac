package responses

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"

	"github.com/turnlog/turnlog/engine/openai"
)

// DefaultBaseURL is OpenAI's endpoint, used when Config.BaseURL is empty.
const DefaultBaseURL = openai.DefaultBaseURL

// Environment variables read by ConfigFromEnv: the same as engine/openai's,
// since both speak to the same servers with the same credentials.
const (
	EnvBaseURL = openai.EnvBaseURL
	EnvAPIKey  = openai.EnvAPIKey
	EnvModel   = openai.EnvModel
)

// ReasoningEfforts are the values Config.ReasoningEffort accepts besides ""
// (the model's default).
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// ReasoningSummaries are the values Config.ReasoningSummary accepts:
// "none" asks for no summary (organizations that are not verified for
// summaries get an error otherwise), the others are the API's.
var ReasoningSummaries = []string{"auto", "concise", "detailed", "none"}

// Config is what an Engine needs; New validates it.
type Config struct {
	// BaseURL is the API root including /v1 (default DefaultBaseURL);
	// requests go to BaseURL + "/responses".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends none.
	// It never appears in an error.
	APIKey string
	// Model is used when Input.Model is empty.
	Model string
	// HTTPClient sends the requests (nil: a client without a timeout; bound
	// calls with the context).
	HTTPClient *http.Client
	// Stream asks for server-sent events, so that text and reasoning
	// summaries reach the delta callback as they are generated.
	Stream bool
	// MaxOutputTokens bounds the answer, reasoning included (0: the
	// model's limit).
	MaxOutputTokens int
	// ReasoningEffort is "" (the model's default) or one of
	// ReasoningEfforts.
	ReasoningEffort string
	// ReasoningSummary is "" or "none" (no summary) or "auto", "concise",
	// "detailed". Summaries are what replay shows of the reasoning.
	ReasoningSummary string
}

// DefaultConfig returns OpenAI's endpoint, streaming and "auto" reasoning
// summaries; Model and APIKey are left to the caller.
func DefaultConfig() Config {
	return Config{BaseURL: DefaultBaseURL, Stream: true, ReasoningSummary: "auto"}
}

// ConfigFromEnv returns DefaultConfig overridden by OPENAI_BASE_URL,
// OPENAI_API_KEY and OPENAI_MODEL when set. It is the only place this
// package reads the environment.
func ConfigFromEnv() Config {
	cfg := DefaultConfig()
	if v := os.Getenv(EnvBaseURL); v != "" {
		cfg.BaseURL = v
	}
	cfg.APIKey = os.Getenv(EnvAPIKey)
	cfg.Model = os.Getenv(EnvModel)
	return cfg
}

// Validate reports the first setting that cannot work, saying how to fix it.
func (c Config) Validate() error {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("base URL %q is not an absolute http(s) URL without query; set it to the API root, e.g. %s", c.BaseURL, DefaultBaseURL)
		}
	}
	if c.MaxOutputTokens < 0 {
		return fmt.Errorf("max output tokens %d is negative; use 0 for the model's limit", c.MaxOutputTokens)
	}
	if c.ReasoningEffort != "" && !slices.Contains(ReasoningEfforts, c.ReasoningEffort) {
		return fmt.Errorf("reasoning effort %q: use one of %v, or leave it empty for the model's default", c.ReasoningEffort, ReasoningEfforts)
	}
	if c.ReasoningSummary != "" && !slices.Contains(ReasoningSummaries, c.ReasoningSummary) {
		return fmt.Errorf("reasoning summary %q: use one of %v", c.ReasoningSummary, ReasoningSummaries)
	}
	return nil
}
