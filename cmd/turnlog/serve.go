package main

import (
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
)

func init() { commands = append(commands, newServeCmd) }

func newServeCmd() *cobra.Command {
	var (
		data   string
		listen string
		sync   string
		prefix string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run turnlog on this machine with an embedded NATS server",
		Long: `serve starts an embedded NATS server with JetStream on a data directory,
creates turnlog's streams and buckets, and listens for NATS clients, so that
every other turnlog command (and any NATS client) can use it.

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
			if _, err := eventlog.Open(ctx, nc, eventlog.WithPrefix(prefix)); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "turnlog: NATS with JetStream listening on %s (data in %s, sync %s)\n", srv.ClientURL(), data, syncName(sync))
			fmt.Fprintln(out, "turnlog: streams ready; press Ctrl-C to stop")
			<-ctx.Done()
			fmt.Fprintln(out, "turnlog: shutting down")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&data, "data", envOr("TURNLOG_DATA", "./.turnlog"), "data directory for the JetStream store (env TURNLOG_DATA)")
	fs.StringVar(&listen, "listen", envOr("TURNLOG_LISTEN", "127.0.0.1:4222"), "HOST:PORT for NATS clients (env TURNLOG_LISTEN)")
	fs.StringVar(&sync, "sync", envOr("TURNLOG_SYNC", embedded.SyncInterval), "fsync policy: interval or always (env TURNLOG_SYNC)")
	fs.StringVar(&prefix, "prefix", envOr("TURNLOG_PREFIX", eventlog.DefaultPrefix), "subject prefix and stream name stem (env TURNLOG_PREFIX)")
	return cmd
}

func syncName(s string) string {
	if s == "" {
		return embedded.SyncInterval
	}
	return s
}
