package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/engine/wire"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
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
		hosts   []string
		noAuth  bool
		noToken bool
		gf      gatewayFlags
	)
	maxStore, maxStoreErr := envByteSize("TURNLOG_MAX_STORE", 0)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run turnlog on this machine with an embedded NATS server",
		Long: `serve runs the whole system on one machine: an embedded NATS server with
JetStream on a data directory, turnlog's streams and buckets, and --workers
workers (default 2) answering chat requests with the scripted engine unless
a profile configures a provider. It listens for NATS clients, so every other
turnlog command (and any NATS client) can use it:

  turnlog chat -m "hello"

Authentication: the NATS server refuses any connection without a key. On
first start serve writes one key per role to <data>/auth/ (admin.nk,
client.nk, worker.nk; readable by their owner only): turnlog commands run
where the data directory is (or with TURNLOG_DATA) use admin.nk without any
flag; give client.nk to whoever may only chat and read, worker.nk to remote
workers; nats --nkey FILE uses them too. --no-auth turns authentication
off: then anyone who can reach --listen can read, write and erase every
conversation.

The HTTP API (--http, default 127.0.0.1:8080) needs a bearer token for
every request but the console's pages: --token, or TURNLOG_TOKEN, or else
the token in <data>/auth/http.token, which serve makes on first start
(mode 0600) and reuses. Prefer TURNLOG_TOKEN or that file to --token: a
command line is visible to every user of the machine (ps), and serve warns
when it gets one. The banner says where the token is and the console's
address with it (http://HOST:PORT/#token=...: the console keeps the token
for the tab and takes it out of the address bar). --no-token turns the
token off, with a warning: then anyone who can reach --http can read and
change every conversation.

--metrics HOST:PORT (off by default, env TURNLOG_METRICS) serves the
workers' and the gateway's Prometheus series (/metrics, /metrics/w2, ...,
/metrics/gateway) to the same token only, sent as "Authorization: Bearer
<token>" (Prometheus: authorization.credentials_file pointing at
<data>/auth/http.token), also with --http ''; others get 401. With
--no-token they need none either.

The recording gateway is on the same listener: apps point their OpenAI or
Anthropic SDK's base URL at http://HOST:PORT/v1 (OpenAI) or http://HOST:PORT
(Anthropic) and every call is forwarded to --openai-upstream or
--anthropic-upstream and recorded as conversation events (docs/gateway.md).

Durability: by default JetStream fsyncs on an interval: a crash of the
process loses nothing, a power loss can lose the writes of the last interval.
--sync always fsyncs every write before acknowledging it (nothing
acknowledged is ever lost, at a large cost in throughput). To survive the
loss of a machine, run a 3-node cluster with replicated streams (see
docker-compose.yml).

One server per data directory: serve locks --data (an OS file lock, which
the kernel releases when the process ends, even on SIGKILL) before it opens
anything there, and a second serve on the same directory is refused at once
with the PID and NATS address of the one that holds it. Client commands
run with the same data directory and no --nats-url connect to that address
(<data>/turnlog.lock), whatever --listen says.

Storage: JetStream may keep --max-store bytes in --data (default: what the
store holds plus three quarters of the free space of its file system,
raised while serve runs when space is freed there). Pending requests may
reserve a quarter of it (at most 1 GiB) and dead letters a sixteenth (at
most 256 MiB); the banner says how much. When it is full, new requests are
refused with "JetStream storage is full", requests already accepted wait
in the workers' hands, and everything goes on once space is freed: see
docs/storage.md, "When the disk fills".

Stop it with Ctrl-C or SIGTERM; it shuts down cleanly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.check(); err != nil {
				return err
			}
			// A profiles file it cannot read is said before anything
			// starts or is written.
			if _, err := profile.Load(wf.profiles); err != nil {
				return err
			}
			if maxStoreErr != nil && !cmd.Flags().Changed("max-store") {
				return maxStoreErr
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			stopTracing, err := startTracing(ctx, "turnlog", wf.otel.content, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stopTracing()
			out := cmd.OutOrStdout()
			// The directory is locked before anything is written into it
			// (keys, the store): a second server is refused before it
			// touches a file.
			lock, err := embedded.LockDataDir(data)
			if err != nil {
				return err
			}
			store, err := planStorage(data, int64(maxStore))
			if err != nil {
				lock.Release()
				return err
			}
			cfg := embedded.Config{DataDir: data, Listen: listen, Sync: sync, Lock: lock, MaxStore: store.maxStore, StreamsAccount: natsauth.Account,
				Warn: func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "turnlog: WARNING: %s\n", s) }}
			var adminKey, workerKey nats.Option
			if noAuth {
				fmt.Fprintf(cmd.ErrOrStderr(), "turnlog: WARNING: NATS authentication is off (--no-auth): anyone who can reach %s can read, write and erase every conversation\n", listen)
			} else {
				keys, err := serveKeys(data, eventlog.NamesFor(prefix).WithEventShards(wf.eventShards), out)
				if err != nil {
					lock.Release()
					return err
				}
				cfg.Users, cfg.Accounts, adminKey, workerKey = keys.auth.Users, keys.auth.Accounts, keys.admin, keys.worker
			}
			srv, err := embedded.Start(cfg)
			if err != nil {
				return err
			}
			defer srv.Shutdown()
			nc, err := srv.Connect(append(withKey(adminKey), nats.CustomInboxPrefix(natsauth.InboxPrefix(natsauth.Admin)))...)
			if err != nil {
				return err
			}
			defer nc.Close()
			logOpts := append(wf.logOptions(), eventlog.WithPrefix(prefix))
			if store.maxStore > 0 {
				logOpts = append(logOpts, eventlog.WithStorageBudget(store.maxStore))
			}
			l, err := eventlog.Open(ctx, nc, logOpts...)
			if err == nil && !noAuth && l.Names().Shards() != max(wf.eventShards, 1) {
				// The roles' permissions name the event streams, so they
				// were made for the count serve was given.
				err = fmt.Errorf("%s holds %d event streams: start serve with --event-shards %d", data, l.Names().Shards(), l.Names().Shards())
			}
			if err != nil {
				return err
			}
			logger, err := wf.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// No template, previewed over HTTP or rendered for a request,
			// reads the keys and the token.
			if err := wf.denyKeysOf(data); err != nil {
				return err
			}
			fmt.Fprintf(out, "turnlog: NATS with JetStream listening on %s (data in %s, sync %s, %s)\n", srv.ClientURL(), data, syncName(sync), authName(noAuth))
			fmt.Fprintln(out, store.banner(srv))
			wf.storage = func() *worker.Storage {
				st, err := srv.Storage()
				if err != nil {
					return nil
				}
				return &worker.Storage{MaxStore: st.MaxStore, Used: st.Used, Reserved: st.Reserved, DiskFree: st.DiskFree}
			}
			if store.auto {
				go srv.FollowDisk(ctx, followDiskEvery, func(from, to int64) {
					logger.Info("disk space freed: JetStream storage raised", "from", formatBytes(from), "to", formatBytes(to))
				})
			}
			extraMetrics := map[string]http.Handler{}
			var tok httpToken
			if httpAt != "" || wf.metrics != "" {
				// The --metrics listener needs the token too, with or
				// without the HTTP API.
				tok, err = resolveHTTPToken(data, token, cmd.Flags().Changed("token"), noToken, httpAt, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				wf.metricsAuth.serveToken(tok, wf.metrics, func(s string) { fmt.Fprint(cmd.ErrOrStderr(), s) })
			}
			if httpAt != "" {
				profiles, err := profile.Load(wf.profiles)
				if err != nil {
					return err
				}
				roots, err := absCwdRoots(wf.cwdRoots)
				if err != nil {
					return err
				}
				api, err := httpapi.New(httpapi.Config{Log: l, Token: tok.value, AllowedHosts: hosts, Logger: logger, Profiles: profiles,
					CwdRoots: roots, DenyDirs: wf.denyDirs, Wire: wire.New(nil)})
				if err != nil {
					return err
				}
				// The gateway records like a worker: on its own
				// connection with the worker's key, its steps on the
				// workers' subjects.
				gnc, err := srv.Connect(append(withKey(workerKey), refusalLogger(logger), nats.CustomInboxPrefix(natsauth.InboxPrefix(natsauth.Worker)))...)
				if err != nil {
					return err
				}
				defer gnc.Close()
				gl, err := eventlog.Open(ctx, gnc, append(slices.Clone(logOpts), eventlog.WithLogger(logger), eventlog.WithWriterRole(string(natsauth.Worker)))...)
				if err != nil {
					return err
				}
				gcfg, err := gf.config(ctx, gl, gnc, tok.value, data)
				if err != nil {
					return err
				}
				gcfg.Logger, gcfg.Listen = logger, httpAt
				// The API's browser checks hold for the gateway's
				// routes on the same listener.
				gcfg.Guard = api.CrossSite
				gw, err := gateway.New(gcfg)
				if err != nil {
					return err
				}
				extraMetrics["/metrics/gateway"] = gw.Metrics().Handler()
				running, err := httpapi.Start(ctx, httpAt, withGateway(api, gw), logger)
				if err != nil {
					return err
				}
				defer running.Close()
				// Once the listener is up: a port in use ends serve
				// before the gateway follows anything.
				defer runGateway(ctx, gw)()
				fmt.Fprint(out, tok.banner(running.URL(), isTerminal(out)))
				fmt.Fprint(out, gatewayBanner(running.URL(), gw, tok.value == ""))
			}
			if workers > 0 {
				profiles, err := profile.Load(wf.profiles)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "turnlog: %s\n", defaultAnswerer(profiles))
			}
			done := make(chan error, 1)
			go func() {
				done <- runWorkers(ctx, &wf, workers, func() (*nats.Conn, error) {
					return srv.Connect(append(withKey(workerKey), refusalLogger(logger), nats.CustomInboxPrefix(natsauth.InboxPrefix(natsauth.Worker)))...)
				}, nil, logOpts, logger, extraMetrics)
			}()
			customListen := cmd.Flags().Changed("listen") || os.Getenv("TURNLOG_LISTEN") != ""
			if workers == 0 {
				// A chat would wait for nobody: say what answers it.
				fmt.Fprintf(out, "turnlog: ready; try: %s (no workers in this process (--workers 0): chat requests wait until a worker runs; Ctrl-C to stop)\n", workerHint(srv.ClientURL(), customListen))
			} else {
				fmt.Fprintf(out, "turnlog: %s ready; try: %s (Ctrl-C to stop)\n", plural.Count(workers, "worker"), chatHint(srv.ClientURL(), customListen))
			}
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
	fs.StringVar(&token, "token", os.Getenv("TURNLOG_TOKEN"), "bearer token required by every HTTP API request, reads too (env TURNLOG_TOKEN; default: the token in <data>/auth/http.token, made on first start). Prefer the variable or the file: every user of the machine sees a command line (ps)")
	fs.BoolVar(&noToken, "no-token", false, "serve the HTTP API without a token (anyone who reaches --http may read and change every conversation); default: a token, see --token")
	fs.StringSliceVar(&hosts, "allowed-hosts", splitList(os.Getenv("TURNLOG_HTTP_ALLOWED_HOSTS")), "host names the HTTP API may be addressed by besides localhost and IP addresses, comma-separated (a proxy's or the LAN's name for this machine; env TURNLOG_HTTP_ALLOWED_HOSTS)")
	fs.IntVar(&workers, "workers", 2, "workers to run in this process (0: none, NATS only)")
	fs.BoolVar(&noAuth, "no-auth", false, "run NATS without authentication (anyone who reaches --listen may do anything); default: keys per role in <data>/auth/")
	wf.register(fs, "", "serve's token (see --token)")
	gf.register(fs)
	fs.Var(&maxStore, "max-store", "JetStream storage limit in --data, like 512MiB or 20GiB (env TURNLOG_MAX_STORE; default: what the store holds plus 75% of the free disk space, raised as space is freed)")
	fs.StringVar(&prefix, "prefix", envOr("TURNLOG_PREFIX", eventlog.DefaultPrefix), "subject prefix and stream name stem (env TURNLOG_PREFIX)")
	return cmd
}

func syncName(s string) string {
	if s == "" {
		return embedded.SyncInterval
	}
	return s
}

// splitList splits a comma-separated environment value ("" is none).
func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// chatHint is the command the banner suggests: it names the server's URL
// whenever serve listens anywhere but the default, where a bare
// `turnlog chat` finds it only when run with the same data directory (it
// reads the address from turnlog.lock there).
func chatHint(clientURL string, customListen bool) string {
	if !customListen {
		return "turnlog chat -m hello"
	}
	return "turnlog chat --nats-url " + clientURL + " -m hello"
}

// workerHint is the command that starts a worker against this server,
// as chatHint's chat: the worker signs with the data directory's worker
// key.
func workerHint(clientURL string, customListen bool) string {
	if !customListen {
		return "turnlog worker"
	}
	return "turnlog worker --nats-url " + clientURL
}

// defaultAnswerer says who answers a request that names no profile: the
// banner's line, so that nobody takes the scripted engine's echo for a
// model's answer, or wonders which model a profile reached.
func defaultAnswerer(profiles profile.Set) string {
	p, ok := profiles[profile.DefaultName]
	if !ok {
		return fmt.Sprintf("no profile is named %q: a request must name one of %s", profile.DefaultName, strings.Join(profiles.Names(), ", "))
	}
	s := p.Summary(profile.DefaultName)
	line := fmt.Sprintf("the workers answer chat requests (turnlog chat, the console) with profile %q: %s", s.Name, describeAnswerer(s))
	if s.Provider == profile.ProviderScripted {
		line += " (scripted answers, no model; --profiles FILE configures a real one)"
	}
	return line
}

// describeAnswerer is a profile's provider, model and endpoint in words.
func describeAnswerer(s profile.Summary) string {
	model := s.Model
	switch {
	case model == "" && s.Described:
		model = "none set (a request must name one)"
	case model == "":
		// An engine of the program's own that told no defaults.
		model = "the engine's choice (the profile sets none)"
	}
	out := fmt.Sprintf("provider %s, model %s", s.Provider, model)
	if s.BaseURL != "" {
		out += " at " + s.BaseURL
	}
	return out
}
