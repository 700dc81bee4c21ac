package cli

// The recording gateway's flags, shared by serve (routes on its HTTP
// listener) and gateway (the gateway alone).

import (
	"net/http"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
	"github.com/turnlog/turnlog/gateway"
)

type gatewayFlags struct {
	openaiUpstream    string
	anthropicUpstream string
	maxBody           byteSize
}

func (f *gatewayFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.openaiUpstream, "openai-upstream", envOr("TURNLOG_OPENAI_UPSTREAM", gateway.DefaultOpenAIUpstream),
		"base URL of the OpenAI-compatible API the gateway forwards /v1/chat/completions and /v1/responses to, as the openai SDK takes it (with /v1; env TURNLOG_OPENAI_UPSTREAM)")
	fs.StringVar(&f.anthropicUpstream, "anthropic-upstream", envOr("TURNLOG_ANTHROPIC_UPSTREAM", gateway.DefaultAnthropicUpstream),
		"base URL of the Anthropic API the gateway forwards /v1/messages to, as the Anthropic SDK takes it (without /v1; env TURNLOG_ANTHROPIC_UPSTREAM)")
	f.maxBody = byteSize(gateway.DefaultMaxBody)
	fs.Var(&f.maxBody, "max-body", "largest request body the gateway accepts (413 past it), and response bytes it keeps to record a call (e.g. 32MiB)")
}

// config is the gateway's configuration: the provider keys come from the
// environment only (TURNLOG_OPENAI_API_KEY, TURNLOG_ANTHROPIC_API_KEY),
// never from a flag a process list would show.
func (f *gatewayFlags) config(l gateway.Log, nc *nats.Conn, token string) gateway.Config {
	return gateway.Config{
		Log: l, Connected: nc.IsConnected, Token: token,
		OpenAIUpstream: f.openaiUpstream, AnthropicUpstream: f.anthropicUpstream,
		OpenAIKey:    strings.TrimSpace(os.Getenv("TURNLOG_OPENAI_API_KEY")),
		AnthropicKey: strings.TrimSpace(os.Getenv("TURNLOG_ANTHROPIC_API_KEY")),
		MaxBody:      int64(f.maxBody),
	}
}

// withGateway serves /v1/ paths by the gateway, everything else by api.
func withGateway(api http.Handler, g *gateway.Gateway) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			g.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
