package cli

// The recording gateway's flags, shared by serve (routes on its HTTP
// listener) and gateway (the gateway alone).

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
)

type gatewayFlags struct {
	openaiUpstream    string
	anthropicUpstream string
	maxBody           byteSize
	maxInFlight       byteSize
	recordOptional    bool
	spoolDir          string
	spoolBytes        byteSize
	upstreamTimeout   time.Duration
	backgroundPoll    time.Duration
}

func (f *gatewayFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.openaiUpstream, "openai-upstream", envOr("TURNLOG_OPENAI_UPSTREAM", gateway.DefaultOpenAIUpstream),
		"base URL of the OpenAI-compatible API the gateway forwards /v1/chat/completions and /v1/responses to, as the openai SDK takes it (with /v1; env TURNLOG_OPENAI_UPSTREAM)")
	fs.StringVar(&f.anthropicUpstream, "anthropic-upstream", envOr("TURNLOG_ANTHROPIC_UPSTREAM", gateway.DefaultAnthropicUpstream),
		"base URL of the Anthropic API the gateway forwards /v1/messages to, as the Anthropic SDK takes it (without /v1; env TURNLOG_ANTHROPIC_UPSTREAM)")
	f.maxBody = byteSize(gateway.DefaultMaxBody)
	fs.Var(&f.maxBody, "max-body", "largest request body the gateway accepts (413 past it), and response bytes it keeps to record a call (e.g. 32MiB); a call's new content or answer larger than one NATS message (max_payload, 8MiB embedded) is forwarded and recorded without it (see docs/gateway.md, Failures)")
	f.maxInFlight = byteSize(gateway.DefaultMaxInFlightBytes)
	fs.Var(&f.maxInFlight, "max-inflight-bytes", "most request-body bytes the gateway holds at once across the calls in flight (at least --max-body; the default is raised to --max-body when that is larger); a call that finds no room waits up to 10 s, then is answered 503 with nothing forwarded (e.g. 256MiB)")
	fs.DurationVar(&f.upstreamTimeout, "upstream-timeout", gateway.DefaultUpstreamTimeout, "how long the gateway waits for the provider's answer to begin (its headers) before it answers 504 and records the call failed")
	fs.DurationVar(&f.backgroundPoll, "background-poll", gateway.DefaultBackgroundPoll, "with a managed OpenAI key (TURNLOG_OPENAI_API_KEY), how soon the gateway asks the provider how a background response (background: true) ended when the app does not fetch it through the gateway (a webhook tells it), then twice as long each time up to 2m, for 24h; the end is recorded as the call's outcome; what is asked about is kept in the TURNLOG_BACKGROUND bucket, so a restarted or another gateway goes on asking; 0: never ask (the call stays open until a fetch through the gateway)")
	fs.BoolVar(&f.recordOptional, "record-optional", false, "while NATS is unreachable, forward calls anyway and keep them in an on-disk spool, recorded once NATS is back (default: answer 503 and forward nothing); a full spool answers 503")
	fs.StringVar(&f.spoolDir, "spool-dir", os.Getenv("TURNLOG_SPOOL_DIR"), "directory of --record-optional's spool, one per gateway process (env TURNLOG_SPOOL_DIR; default <data>/gateway-spool)")
	f.spoolBytes = byteSize(gateway.DefaultSpoolBytes)
	fs.Var(&f.spoolBytes, "spool-bytes", "most bytes --record-optional's spool holds (e.g. 1GiB); past it calls are answered 503")
}

// config is the gateway's configuration: the provider keys come from the
// environment only (TURNLOG_OPENAI_API_KEY, TURNLOG_ANTHROPIC_API_KEY),
// never from a flag a process list would show.
// The threading index is the installation's shared bucket, so that
// gateways behind one load balancer thread alike. dataDir is where the
// spool goes unless --spool-dir says otherwise.
func (f *gatewayFlags) config(ctx context.Context, l *eventlog.Log, nc *nats.Conn, token, dataDir string) (gateway.Config, error) {
	threads, err := l.Threads(ctx)
	if err != nil {
		return gateway.Config{}, err
	}
	// Kept beyond the process when it asks about background responses:
	// a restart, or another gateway, goes on asking.
	var background gateway.BackgroundStore
	openAIKey := strings.TrimSpace(os.Getenv("TURNLOG_OPENAI_API_KEY"))
	if openAIKey != "" && f.pollOrNever() > 0 {
		if background, err = l.BackgroundResponses(ctx); err != nil {
			return gateway.Config{}, err
		}
	}
	spool := f.spoolDir
	if spool == "" {
		spool = filepath.Join(dataDir, "gateway-spool")
	}
	return gateway.Config{
		Log: l, Connected: nc.IsConnected, Token: token, Threads: threads,
		OpenAIUpstream: f.openaiUpstream, AnthropicUpstream: f.anthropicUpstream,
		OpenAIKey:        openAIKey,
		AnthropicKey:     strings.TrimSpace(os.Getenv("TURNLOG_ANTHROPIC_API_KEY")),
		MaxBody:          int64(f.maxBody),
		MaxInFlightBytes: f.inFlightBytes(),
		UpstreamTimeout:  f.upstreamTimeout,
		BackgroundPoll:   f.pollOrNever(),
		Background:       background,
		RecordOptional:   f.recordOptional, SpoolDir: spool, SpoolBytes: int64(f.spoolBytes),
	}, nil
}

// pollOrNever is --background-poll as Config takes it: 0 (or less) is
// never, which Config spells as negative (its zero is the default).
func (f *gatewayFlags) pollOrNever() time.Duration {
	if f.backgroundPoll <= 0 {
		return -1
	}
	return f.backgroundPoll
}

// inFlightBytes is --max-inflight-bytes, raised to --max-body when it was
// left at its default below it.
func (f *gatewayFlags) inFlightBytes() int64 {
	if f.maxInFlight == byteSize(gateway.DefaultMaxInFlightBytes) {
		return max(int64(f.maxInFlight), int64(f.maxBody))
	}
	return int64(f.maxInFlight)
}

// withGateway serves the gateway's paths (/v1/, and the calls whose path
// shows a wrong base URL: gateway.Gateway.Handles) by the gateway,
// everything else by api.
func withGateway(api http.Handler, g *gateway.Gateway) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.Handles(r) {
			g.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// gatewayBanner is the start-up lines of serve and gateway that tell an
// operator where each SDK points (base is the listener's URL), how its
// calls authenticate, and whether calls are forwarded while NATS is
// unreachable (--record-optional) and spooled where; a provider key is named by its variable, never
// shown. tokenless: serve runs without a token (--no-token), so calls
// carry none.
func gatewayBanner(base string, g *gateway.Gateway, tokenless bool) string {
	keys := func(managed bool, env string) string {
		switch {
		case managed && tokenless:
			return "managed key (" + env + "): no token (--no-token), so any client that reaches this address calls with it"
		case managed:
			return "managed key (" + env + "): clients send turnlog's token as their API key"
		case tokenless:
			return "keys pass through: each call carries its own provider key (" + env + " unset); no token (--no-token)"
		}
		return "keys pass through: each call carries Turnlog-Token: <turnlog's token> and its own provider key (" + env + " unset)"
	}
	openai, anthropic := g.Upstreams()
	openaiKey, anthropicKey := g.ManagedKeys()
	optional := "turnlog: record-optional: off: while NATS is unreachable calls are answered 503 and not forwarded (--record-optional forwards and spools them)\n"
	if spool := g.Spool(); spool != "" {
		optional = "turnlog: record-optional: on: while NATS is unreachable calls are forwarded and kept in the spool " + spool + ", recorded once NATS is back\n"
	}
	return fmt.Sprintf("turnlog: recording gateway for OpenAI SDKs: base URL %s/v1, forwarded to %s; %s\n"+
		"turnlog: recording gateway for Anthropic SDKs: base URL %s, forwarded to %s; %s\n",
		base, openai, keys(openaiKey, "TURNLOG_OPENAI_API_KEY"),
		base, anthropic, keys(anthropicKey, "TURNLOG_ANTHROPIC_API_KEY")) + optional
}
