package main

import (
	"context"
	"errors"

	"fmt"
	"github.com/nats-io/nats.go"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/profile"
)

func init() { commands = append(commands, newServeCmd) }

func newServeCmd() *cobra.Command {
	var (
		data    string
		listen  string
		sync    string
		prefix  string
		workers int
		wf      workerFlags
		httpAt  string
		token   string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run turnlog on this machine with an embedded NATS server",
		Long: `serve runs the whole system on one machine: an embedded NATS server with
JetStream on a data directory, turnlog's streams and buckets, and --workers
workers (default 2) answering chat requests with the scripted engine unless
a profile configures a provider. It listens for NATS clients, so every other
turnlog command (and any NATS client) can use it:

  turnlog chat -m "hello"

Durability: by default JetStream fsyncs on an interval: a crash of the
process loses nothing, a power loss can lose the writes of the last interval.
--sync always fsyncs every write before acknowledging it (nothing
acknowledged is ever lost, at a large cost in throughput). To survive the
loss of a machine, run a 3-node cluster with replicated streams (see
docker-compose.yml).

Stop it with Ctrl-C or SIGTERM; it shuts down cleanly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv, err := embedded.Start(embedded.Config{DataDir: data, Listen: listen, Sync: sync})
			if err != nil {
				return err
			}
			defer srv.Shutdown()
			nc, err := srv.Connect()
			if err != nil {
				return err
			}
			defer nc.Close()
			logOpts := append(wf.logOptions(), eventlog.WithPrefix(prefix))
			l, err := eventlog.Open(ctx, nc, logOpts...)
			if err != nil {
				return err
			}
			logger, err := wf.logger()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "turnlog: NATS with JetStream listening on %s (data in %s, sync %s)\n", srv.ClientURL(), data, syncName(sync))
			if httpAt != "" {
				profiles, err := profile.Load(wf.profiles)
				if err != nil {
					return err
				}
				api, err := httpapi.New(httpapi.Config{Log: l, Token: token, Logger: logger, Profiles: profiles})
				if err != nil {
					return err
				}
				running, err := httpapi.Start(ctx, httpAt, api, logger)
				if err != nil {
					return err
				}
				defer running.Close()
				fmt.Fprintf(out, "turnlog: HTTP API and web console on %s\n", running.URL())
			}
			done := make(chan error, 1)
			go func() {
				done <- runWorkers(ctx, &wf, workers, func() (*nats.Conn, error) { return srv.Connect() }, logOpts, logger)
			}()
			fmt.Fprintf(out, "turnlog: %d workers ready; try: %s (Ctrl-C to stop)\n", workers, chatHint(srv.ClientURL(), cmd.Flags().Changed("listen") || os.Getenv("TURNLOG_LISTEN") != ""))
			err = <-done
			fmt.Fprintln(out, "turnlog: stopped")
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&data, "data", envOr("TURNLOG_DATA", "./.turnlog"), "data directory for the JetStream store (env TURNLOG_DATA)")
	fs.StringVar(&listen, "listen", envOr("TURNLOG_LISTEN", "127.0.0.1:4222"), "HOST:PORT for NATS clients (env TURNLOG_LISTEN)")
	fs.StringVar(&sync, "sync", envOr("TURNLOG_SYNC", embedded.SyncInterval), "fsync policy: interval or always (env TURNLOG_SYNC)")
	fs.StringVar(&httpAt, "http", envOr("TURNLOG_HTTP", "127.0.0.1:8080"), "HOST:PORT of the HTTP API and web console ('' turns it off; env TURNLOG_HTTP)")
	fs.StringVar(&token, "token", os.Getenv("TURNLOG_TOKEN"), "bearer token required for writes to the HTTP API (env TURNLOG_TOKEN; keep a token-less server on localhost)")
	fs.IntVar(&workers, "workers", 2, "workers to run in this process (0: none, NATS only)")
	wf.register(fs, "")
	fs.StringVar(&prefix, "prefix", envOr("TURNLOG_PREFIX", eventlog.DefaultPrefix), "subject prefix and stream name stem (env TURNLOG_PREFIX)")
	return cmd
}

func syncName(s string) string {
	if s == "" {
		return embedded.SyncInterval
	}
	return s
}

// chatHint is the command the banner suggests: it names the server's URL
// whenever serve listens anywhere but the default, where a bare
// `turnlog chat` would not find it (or would find another server).
func chatHint(clientURL string, customListen bool) string {
	if !customListen {
		return "turnlog chat -m hello"
	}
	return "turnlog chat --nats-url " + clientURL + " -m hello"
}
