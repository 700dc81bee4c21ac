// Package gateway is the recording gateway's HTTP side: apps that turnlog
// does not run point their OpenAI or Anthropic SDK's base URL at it, and it
// forwards every call to the real provider unchanged while recording it as
// conversation events (package calls turns a call into events). Routes:
// POST /v1/chat/completions, /v1/responses (OpenAI-compatible upstream) and
// /v1/messages (Anthropic upstream), streamed or not; other /v1/ paths are
// forwarded unrecorded. See docs/gateway.md.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Default upstreams, as the providers' SDKs take their base URL.
const (
	DefaultOpenAIUpstream    = "https://api.openai.com/v1"
	DefaultAnthropicUpstream = "https://api.anthropic.com"
)

// DefaultMaxBody bounds a request body, and the part of a response body
// kept to record it, unless Config says otherwise.
const DefaultMaxBody = 32 << 20

// Log is what the gateway needs of the event log; *eventlog.Log
// implements it. It appends like a worker: one message per step, fenced by
// the conversation's expected last sequence.
type Log interface {
	Load(ctx context.Context, conversation string) (*projector.Turn, error)
	LoadAt(ctx context.Context, conversation string, n int) (*projector.Turn, error)
	Append(ctx context.Context, conversation string, expectedSeq uint64, evs ...events.Event) (uint64, error)
	// SaveSnapshot and SnapshotEvery keep the gateway's conversations
	// quick to load (it serves them from its cache and rarely loads).
	SaveSnapshot(ctx context.Context, turn *projector.Turn, lastMsgID string) error
	SnapshotEvery() int
	// Holds tells, after a refused append, a conversation that moved on
	// from one erased under the call (eventlog.Log.Holds).
	Holds(ctx context.Context, conversation string, seq uint64) (bool, error)
}

// Config configures a Gateway (Log and Connected are required) or a
// Recorder (Log is).
type Config struct {
	Log Log
	// Guard, when set, refuses a call before anything else is done with it
	// (403 in the API's error shape, nothing forwarded) when it returns a
	// reason: serve's listener passes the HTTP API's browser checks
	// (httpapi.Server.CrossSite), so that no web page can use the gateway
	// on it, token or not.
	Guard func(*http.Request) string
	// Connected reports whether the log's NATS connection is up: when it
	// is not, calls are answered 503 without being forwarded.
	Connected func() bool
	// Token is turnlog's HTTP token: what a client sends as its API key
	// (managed keys) or in Turnlog-Token (pass-through). Empty: calls need
	// no token (serve --no-token).
	Token string
	// OpenAIUpstream and AnthropicUpstream are the providers' base URLs
	// (defaults DefaultOpenAIUpstream, DefaultAnthropicUpstream).
	OpenAIUpstream, AnthropicUpstream string
	// Listen is the address the gateway serves on, as its command was
	// given it: said among the running gateways (turnlog status), and
	// nowhere else.
	Listen string
	// OpenAIKey and AnthropicKey, when set, are sent upstream instead of
	// the client's key (managed keys): the client's API key is then
	// Token. They are never recorded or logged.
	OpenAIKey, AnthropicKey string
	// BackgroundPoll is how soon after a Responses API call is answered
	// "queued" (background: true) the gateway, holding a managed
	// OpenAIKey, asks the provider how the response ended, for an app
	// that does not fetch it through the gateway (a webhook tells it);
	// each later ask waits twice as long, up to 2 minutes, for at most 24
	// hours. The end is recorded as the call's outcome, as a fetch
	// through the gateway records it. Default DefaultBackgroundPoll;
	// negative: never ask (the call stays open until a fetch through the
	// gateway). Without a managed key the gateway has no key to ask with.
	// Asked by Run.
	BackgroundPoll time.Duration
	// Background keeps the background responses the gateway asks about
	// beyond its process (eventlog.Log.BackgroundResponses): a gateway
	// that restarts, or another of the installation, goes on asking about
	// those a stopped gateway followed. Nil: this process's memory alone,
	// which a restart forgets (the calls then wait for a fetch through
	// the gateway).
	Background BackgroundStore
	// MaxBody bounds request bodies (413 past it) and the response bytes
	// kept to record a call (default DefaultMaxBody).
	MaxBody int64
	// MaxInFlightBytes bounds the request bodies held at once by the
	// calls in flight (default DefaultMaxInFlightBytes, or MaxBody when
	// larger; at least MaxBody): a call that finds no room waits for it
	// up to InFlightWait (default 10 s), then is answered 503 with
	// nothing forwarded.
	MaxInFlightBytes int64
	InFlightWait     time.Duration
	// Transport reaches the upstreams (default a clone of
	// http.DefaultTransport that keeps up to 256 idle connections per
	// upstream: the default's 2 would open a connection per call under
	// concurrent load, and that asks for no compression, so that the
	// provider's bytes are the app's). One of your own should set
	// DisableCompression too.
	Transport http.RoundTripper
	// UpstreamTimeout bounds the wait for the upstream's answer to begin
	// (its headers; a stream's events may then take as long as they
	// take): past it the call is answered 504 and recorded failed
	// (default DefaultUpstreamTimeout).
	UpstreamTimeout time.Duration
	// NoCheck turns off checking each call with replay --check's rules
	// as it is recorded (findings recorded as finding.recorded events and
	// counted in turnlog_findings_total). Checks are on by default.
	NoCheck bool
	// Threads keeps the threading index (see calls.Threads). Gateways
	// behind one load balancer share one (eventlog.Log.Threads); default
	// a calls.MemStore of 100,000 entries, this process's alone.
	Threads calls.ThreadStore
	// CacheBytes bounds the Turns the gateway keeps in memory (default
	// DefaultCacheBytes; negative: none); the checkers of their
	// conversations (see checks.go) may hold a quarter of it again.
	CacheBytes int64
	// RecordOptional forwards calls while NATS is unreachable and keeps
	// them in a spool, in SpoolDir (required then), of at most SpoolBytes
	// (default DefaultSpoolBytes), recorded once NATS is back (Run).
	RecordOptional bool
	SpoolDir       string
	SpoolBytes     int64
	// Metrics receives the gateway's series (default a new set).
	Metrics *Metrics
	Logger  *slog.Logger
}

// DefaultUpstreamTimeout is Config.UpstreamTimeout's default: a model
// that writes a long answer without streaming sends its headers only at
// the end.
const DefaultUpstreamTimeout = 10 * time.Minute

// DefaultCacheBytes bounds the gateway's cache of Turns unless Config
// says otherwise.
const DefaultCacheBytes = 256 << 20

// Validate fills in defaults and reports what is wrong.
func (c *Config) Validate() error {
	if c.Log == nil {
		return errors.New("gateway: Config.Log is required")
	}
	if c.OpenAIUpstream == "" {
		c.OpenAIUpstream = DefaultOpenAIUpstream
	}
	if c.AnthropicUpstream == "" {
		c.AnthropicUpstream = DefaultAnthropicUpstream
	}
	// In a fixed order, each with its own provider's example: an
	// Anthropic upstream told to look like OpenAI's would be given /v1.
	for _, up := range []struct{ flag, url, example string }{
		{"--openai-upstream", c.OpenAIUpstream, DefaultOpenAIUpstream},
		{"--anthropic-upstream", c.AnthropicUpstream, DefaultAnthropicUpstream},
	} {
		p, err := url.Parse(up.url)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("gateway: %s %q: give the provider's base URL as its SDK takes it, such as %s", up.flag, up.url, up.example)
		}
	}
	// Anthropic's routes keep their /v1 (proxy): an upstream ending in
	// /v1 would be called at /v1/v1/messages and answer every call 404,
	// as a profile's base URL would (engine/anthropic's Validate).
	if p, _ := url.Parse(c.AnthropicUpstream); strings.HasSuffix(strings.TrimRight(p.Path, "/"), "/v1") {
		p.Path = strings.TrimSuffix(strings.TrimRight(p.Path, "/"), "/v1")
		p.RawPath = ""
		return fmt.Errorf("gateway: --anthropic-upstream %q ends in /v1, but the gateway adds /v1/messages itself; give the Anthropic SDK's base URL, without /v1: %s", c.AnthropicUpstream, p)
	}
	if strings.TrimSpace(c.Token) != c.Token {
		return errors.New("gateway: the token starts or ends with white space; remove it")
	}
	if c.MaxBody <= 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxInFlightBytes <= 0 {
		c.MaxInFlightBytes = max(DefaultMaxInFlightBytes, c.MaxBody)
	}
	if c.InFlightWait <= 0 {
		c.InFlightWait = DefaultInFlightWait
	}
	if c.MaxInFlightBytes < c.MaxBody {
		return fmt.Errorf("gateway: --max-inflight-bytes (%d) is below --max-body (%d): a call of the largest body allowed could never be held", c.MaxInFlightBytes, c.MaxBody)
	}
	if c.BackgroundPoll == 0 {
		c.BackgroundPoll = DefaultBackgroundPoll
	}
	if c.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 256
		// The provider answers as it writes: asked for gzip (what the
		// transport does by itself), it would compress, and the transport
		// inflate, so that the app got other bytes than the provider sent
		// and a stream's events went through a gzip reader.
		t.DisableCompression = true
		c.Transport = t
	}
	if c.UpstreamTimeout <= 0 {
		c.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if c.Threads == nil {
		c.Threads = calls.NewMemStore(100000)
	}
	if c.CacheBytes == 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	if c.RecordOptional && c.SpoolDir == "" {
		return errors.New("gateway: --record-optional needs a spool directory (--spool-dir)")
	}
	if c.SpoolBytes <= 0 {
		c.SpoolBytes = DefaultSpoolBytes
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// openAIUpstreamDoubt is a warning about an OpenAI upstream whose calls
// will likely miss its API, or "". It never refuses: the gateway appends
// the route without its /v1 (/chat/completions) to the upstream's path,
// and OpenAI-compatible servers put their API where they like (Gemini's
// /v1beta/openai, Azure's /openai/v1, a proxy's root). Only OpenAI's own
// host, which serves under /v1 alone, and an upstream without any path
// (vLLM, Ollama and llama.cpp's server serve under /v1) are doubted.
func openAIUpstreamDoubt(upstream string) string {
	u, err := url.Parse(upstream)
	if err != nil {
		return ""
	}
	path := strings.TrimRight(u.Path, "/")
	if path == "/v1" {
		return ""
	}
	with := *u
	with.Path, with.RawPath = "/v1", ""
	if strings.EqualFold(u.Hostname(), "api.openai.com") {
		return fmt.Sprintf("gateway: --openai-upstream %q: OpenAI serves its API under /v1 only, so every call will get its 404; use %s", upstream, &with)
	}
	if path == "" {
		return fmt.Sprintf("gateway: --openai-upstream %q has no path: calls will go to its /chat/completions and /responses; if the server's API is under /v1, as vLLM's, Ollama's and llama.cpp's are, use %s", upstream, &with)
	}
	return ""
}

// providerKey is the managed key for api's provider ("" in pass-through).
func (c *Config) providerKey(api calls.API) string {
	if api.Anthropic() {
		return c.AnthropicKey
	}
	return c.OpenAIKey
}

// Upstreams are the base URLs the gateway forwards to, defaults filled
// in: what a start-up banner or a status page tells an operator.
func (g *Gateway) Upstreams() (openai, anthropic string) {
	return g.cfg.OpenAIUpstream, g.cfg.AnthropicUpstream
}

// ManagedKeys reports, for each API, whether the gateway holds the
// provider's key (clients send turnlog's token as their API key) or calls
// carry their own (pass-through, with Turnlog-Token), without exposing
// the key.
func (g *Gateway) ManagedKeys() (openai, anthropic bool) {
	return g.cfg.OpenAIKey != "", g.cfg.AnthropicKey != ""
}

// Spool is the directory where the gateway keeps the calls it forwarded
// while NATS was unreachable, until they are recorded (RecordOptional),
// or "" when it forwards none then (it answers 503): what a start-up
// banner tells an operator.
func (g *Gateway) Spool() string {
	if !g.cfg.RecordOptional {
		return ""
	}
	return g.cfg.SpoolDir
}
