package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/natsauth"
)

func init() { commands = append(commands, newGatewayCmd) }

func newGatewayCmd() *cobra.Command {
	var (
		nf       natsFlags
		gf       gatewayFlags
		of       otelFlags
		listen   string
		token    string
		logLevel string
	)
	nf.asRole(natsauth.Worker)
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run the recording gateway alone: apps call their provider through it, and every call is recorded",
		Long: `gateway runs the recording gateway without the rest of serve, connected to a
NATS server as a worker is, so that several can sit behind a load balancer:

  TURNLOG_OPENAI_API_KEY=sk-... turnlog gateway --listen 0.0.0.0:8090 --nats-url nats://nats:4222 --creds worker.nk

Clients point their SDK's base URL at it (OpenAI: http://HOST:PORT/v1,
Anthropic: http://HOST:PORT). POST /v1/chat/completions and /v1/responses go
to --openai-upstream, /v1/messages to --anthropic-upstream; other /v1/ paths
are forwarded unrecorded.

Keys: with TURNLOG_OPENAI_API_KEY or TURNLOG_ANTHROPIC_API_KEY set, clients use
turnlog's token as their API key and the gateway sends the provider key
upstream (managed); otherwise each call carries "Turnlog-Token: <token>" and
its own provider key, which goes upstream unchanged (pass-through). The token
is --token's, or TURNLOG_TOKEN, or the data directory's auth/http.token.
Provider keys are never recorded or logged.

GET /metrics on the same listener serves the gateway's Prometheus series
(turnlog_gateway_*, turnlog_findings_total) to turnlog's token, sent as
"Authorization: Bearer <token>" (Prometheus: authorization.credentials_file).
--record-optional forwards calls while NATS is unreachable and records them
from an on-disk spool once it is back. With OTEL_EXPORTER_OTLP_ENDPOINT set,
each recorded call is a "chat {model}" span, a child of the caller's when
its request carries a W3C traceparent (docs/observability.md). See
docs/gateway.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			tok := token
			if cmd.Flags().Changed("token") && tok != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "turnlog: WARNING: --token on the command line is visible to every user of this machine (ps, /proc/<pid>/cmdline); set TURNLOG_TOKEN instead, or keep the token in the data directory's auth/http.token")
			}
			if tok == "" {
				dir := natsauth.Dir(nf.settings.DataDir)
				if nf.settings.DataDir == "" {
					dir = natsauth.Dir(envOr("TURNLOG_DATA", "./.turnlog"))
				}
				// Read as serve reads it: a file holding no token, or
				// one others may read, is refused, never taken as ""
				// (which would let every call through).
				t, err := natsauth.ReadToken(natsauth.TokenFile(dir))
				if errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("gateway: no token: set TURNLOG_TOKEN (or --token), or run where turnlog serve's data directory holds auth/http.token: %w", err)
				}
				if err != nil {
					// What it says of "the next start" is serve's: the
					// gateway reads the file, never makes it.
					return fmt.Errorf("gateway: %w (turnlog serve makes this file at its start, the gateway only reads it; or set TURNLOG_TOKEN)", err)
				}
				tok = t
			}
			// No reconnect buffer: an append made while NATS is away
			// fails at once. Buffered, a call's outcome was sent when
			// NATS came back, after the gateway had given up on it and
			// cut the app's response (30 s later): the log then held an
			// answer the app never got.
			logger, err := jsonLogger(cmd.ErrOrStderr(), logLevel)
			if err != nil {
				return err
			}
			plan, err := nf.resolve()
			if err != nil {
				return err
			}
			refusals := &startRefusals{process: "turnlog gateway", credential: plan.Credential, role: string(natsauth.Worker),
				need: natsauth.KeyFile(natsauth.Dir(nf.settings.Data()), natsauth.Worker)}
			nc, err := plan.Connect(nats.MaxReconnects(-1), nats.ReconnectBufSize(-1), refusals.option(logger))
			if err != nil {
				return err
			}
			defer nc.Close()
			// Its steps are stored on the workers' subjects, as a
			// worker's are. The log's own warnings go to the same JSON
			// lines.
			openCtx, opened := refusals.watch(ctx)
			l, err := eventlog.Open(openCtx, nc, eventlog.WithPrefix(nf.prefix), eventlog.WithWriterRole(string(natsauth.Worker)), eventlog.WithLogger(logger))
			opened()
			if err != nil {
				return refusals.explain(err)
			}
			data := nf.settings.DataDir
			if data == "" {
				data = envOr("TURNLOG_DATA", "./.turnlog")
			}
			cfg, err := gf.config(ctx, l, nc, tok, data)
			if err != nil {
				return err
			}
			cfg.Listen = listen
			cfg.Logger = logger
			g, err := gateway.New(cfg)
			if err != nil {
				return err
			}
			stopTracing, err := startTracing(ctx, "turnlog-gateway", of.content, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stopTracing()
			mux := http.NewServeMux()
			mux.Handle("GET /metrics", g.MetricsHandler())
			mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed: /metrics is read with GET", http.StatusMethodNotAllowed)
			})
			// The gateway's routes, and its answers to calls whose path
			// shows a wrong base URL (gateway.Gateway.Handles), ahead of
			// the mux, as serve has them: the mux would redirect a path
			// with an empty, '.' or '..' segment to its clean form (307,
			// which a client follows) instead of letting the gateway
			// answer it.
			running, err := httpapi.Start(ctx, listen, withGateway(mux, g), nil)
			if err != nil {
				return err
			}
			defer running.Close()
			// Once the listener is up, as serve does; the command
			// returns (and closes its connection) once Run has, so that
			// the gateway removes its entry among the running ones.
			defer runGateway(ctx, g)()
			fmt.Fprintf(cmd.OutOrStdout(), "turnlog: gateway on %s (recording to NATS)\n", running.URL())
			fmt.Fprint(cmd.OutOrStdout(), gatewayBanner(running.URL(), g, false))
			<-ctx.Done()
			if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", envOr("TURNLOG_GATEWAY_LISTEN", "127.0.0.1:8090"), "HOST:PORT the gateway listens on (env TURNLOG_GATEWAY_LISTEN)")
	fs.StringVar(&token, "token", os.Getenv("TURNLOG_TOKEN"), "turnlog's token, which clients send as their API key or in Turnlog-Token (env TURNLOG_TOKEN; default: <data>/auth/http.token). Prefer the variable or the file: every user of the machine sees a command line (ps)")
	fs.StringVar(&logLevel, "log-level", envOr("TURNLOG_LOG_LEVEL", "info"), "debug, info, warn or error; the log is a JSON object a line on stderr, as serve's (env TURNLOG_LOG_LEVEL)")
	nf.register(fs)
	gf.register(fs)
	of.register(fs)
	return cmd
}

// gatewayRunWait bounds how long a stopping command waits for
// Gateway.Run to return.
const gatewayRunWait = 5 * time.Second

// runGateway runs g until ctx ends; the function it returns stops Run
// and waits for it to return (at most gatewayRunWait): a command that
// closed its NATS connection first would race Run's removal of the
// gateway's entry among the running gateways, which status then listed
// as not seen since.
func runGateway(ctx context.Context, g *gateway.Gateway) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	return func() {
		cancel()
		t := time.NewTimer(gatewayRunWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
	}
}
