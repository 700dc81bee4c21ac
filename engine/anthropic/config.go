package anthropic

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// DefaultBaseURL is Anthropic's endpoint, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is Config.MaxTokens when it is 0: the API requires a
// bound on every answer.
const DefaultMaxTokens = 8192

// Environment variables read by ConfigFromEnv: the SDK's own names, and
// ANTHROPIC_MODEL by analogy with OPENAI_MODEL.
const (
	EnvBaseURL = "ANTHROPIC_BASE_URL" // the API root without /v1, e.g. https://api.anthropic.com
	EnvAPIKey  = "ANTHROPIC_API_KEY"  // sent as x-api-key
	EnvModel   = "ANTHROPIC_MODEL"    // e.g. claude-sonnet-5-5
)

// Thinking configures extended thinking: off (the zero value), adaptive
// (the model decides) or enabled with a budget of tokens.
type Thinking struct {
	Adaptive bool
	// Budget is budget_tokens when thinking is enabled (at least 1024 and
	// below MaxTokens); 0 with Adaptive false is off.
	Budget int
}

// ParseThinking reads a profile's "thinking" setting: "" or "off",
// "adaptive", or a token budget such as "4096".
func ParseThinking(s string) (Thinking, error) {
	switch s = strings.TrimSpace(s); s {
	case "", "off":
		return Thinking{}, nil
	case "adaptive":
		return Thinking{Adaptive: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1024 {
		return Thinking{}, fmt.Errorf("thinking %q: use off, adaptive, or a budget of at least 1024 tokens", s)
	}
	return Thinking{Budget: n}, nil
}

// Config is what an Engine needs; New validates it.
type Config struct {
	// BaseURL is the API root WITHOUT the version (default
	// DefaultBaseURL); requests go to BaseURL + "/v1/messages".
	BaseURL string
	// APIKey is sent as the x-api-key header; empty sends none. It never
	// appears in an error.
	APIKey string
	// Model is used when Input.Model is empty.
	Model string
	// HTTPClient sends the requests (nil: a client without a timeout;
	// bound calls with the context).
	HTTPClient *http.Client
	// Stream asks for server-sent events, so that text and thinking reach
	// the delta callback as they are generated.
	Stream bool
	// MaxTokens bounds each answer, thinking included (0: DefaultMaxTokens).
	MaxTokens int
	// Thinking switches extended thinking on.
	Thinking Thinking
}

// DefaultConfig returns Anthropic's endpoint with streaming on; Model and
// APIKey are left to the caller.
func DefaultConfig() Config {
	return Config{BaseURL: DefaultBaseURL, Stream: true}
}

// ConfigFromEnv returns DefaultConfig overridden by ANTHROPIC_BASE_URL,
// ANTHROPIC_API_KEY and ANTHROPIC_MODEL when set. It is the only place this
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

// maxTokens is MaxTokens with its default applied.
func (c Config) maxTokens() int {
	if c.MaxTokens == 0 {
		return DefaultMaxTokens
	}
	return c.MaxTokens
}

// Validate reports the first setting that cannot work, saying how to fix it.
func (c Config) Validate() error {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("base URL %q is not an absolute http(s) URL without query; set it to the API root, e.g. %s", c.BaseURL, DefaultBaseURL)
		}
		if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
			return fmt.Errorf("base URL %q ends in /v1, but requests add /v1/messages themselves; drop the /v1, e.g. %s", c.BaseURL, DefaultBaseURL)
		}
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("max tokens %d is negative; use 0 for %d", c.MaxTokens, DefaultMaxTokens)
	}
	if c.Thinking.Budget != 0 {
		if c.Thinking.Adaptive {
			return fmt.Errorf("thinking is adaptive and has a budget; choose one")
		}
		if c.Thinking.Budget < 1024 || c.Thinking.Budget >= c.maxTokens() {
			return fmt.Errorf("thinking budget %d must be at least 1024 and below max tokens (%d); raise max_tokens or lower the budget",
				c.Thinking.Budget, c.maxTokens())
		}
	}
	return nil
}
