package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

func init() { commands = append(commands, newWorkerCmd) }

// workerFlags are the settings `worker` and `serve` share.
type workerFlags struct {
	otel otelFlags
	// storage reports the embedded server's storage to the workers of
	// serve (worker.Config.Storage); nil elsewhere.
	storage      func() *worker.Storage
	profiles     string
	metrics      string
	metricsAuth  metricsAuth
	logLevel     string
	replicas     int
	partitions   int
	ackWait      time.Duration
	cacheBytes   byteSize
	idleSnapshot time.Duration
	compression  string
	cwdRoots     []string
	denyDirs     []string // the data directory's auth/ (serve's, or the one --data names)
	envErrs      []envErr // malformed settings in the environment
	flags        *pflag.FlagSet
	eventShards  int
}

// envErr is a malformed environment variable, which matters only if the
// flag that it is the default of is not given.
type envErr struct {
	flag string
	err  error
}

// register adds the flags to fs; metricsDefault is --metrics' default,
// metricsToken says which token its listener requires.
func (f *workerFlags) register(fs *pflag.FlagSet, metricsDefault, metricsToken string) {
	f.flags = fs
	f.otel.register(fs)
	fs.StringVar(&f.profiles, "profiles", os.Getenv("TURNLOG_PROFILES"), "profiles YAML file (env TURNLOG_PROFILES); without it the built-in default profile (see --help)")
	fs.StringVar(&f.metrics, "metrics", envOr("TURNLOG_METRICS", metricsDefault), "HOST:PORT for Prometheus /metrics, served only to requests with "+metricsToken+" as \"Authorization: Bearer <token>\" ('' turns it off; env TURNLOG_METRICS)")
	fs.StringVar(&f.logLevel, "log-level", envOr("TURNLOG_LOG_LEVEL", "info"), "debug, info, warn or error")
	fs.IntVar(&f.replicas, "replicas", 0, "stream replicas when creating streams (3 on a cluster; default: keep existing, 1 when new)")
	fs.IntVar(&f.eventShards, "event-shards", 0, "event streams conversations are spread over, set when the installation is created (a cluster: its number of servers; default: as recorded, 1 when new); opening an installation with another count fails")
	fs.IntVar(&f.partitions, "partitions", 0, "request partitions when creating the requests stream (default: keep existing, 16 when new)")
	ackWait := worker.DefaultAckWait
	if v := os.Getenv("TURNLOG_ACK_WAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.envErrs = append(f.envErrs, envErr{"ack-wait", fmt.Errorf("TURNLOG_ACK_WAIT %q: use a duration such as 3s (or give --ack-wait)", v)})
		}
		ackWait = d
	}
	fs.DurationVar(&f.ackWait, "ack-wait", ackWait, "how long a request may go without a sign of life from its worker before another worker takes it: the longest a dead worker, or a delivery lost on the way, holds a partition (the worker reports progress every third of it; env TURNLOG_ACK_WAIT)")
	var sizeErr error
	f.cacheBytes, sizeErr = envByteSize("TURNLOG_CACHE_BYTES", worker.DefaultCacheBytes)
	if sizeErr != nil {
		f.envErrs = append(f.envErrs, envErr{"cache-bytes", sizeErr})
	}
	fs.Var(&f.cacheBytes, "cache-bytes", "memory each worker's cache of conversations may hold, e.g. 256MiB or 2GiB (env TURNLOG_CACHE_BYTES); metric turnlog_turn_cache_bytes")
	fs.StringVar(&f.compression, "compression", os.Getenv("TURNLOG_COMPRESSION"), "how the event streams store messages on disk: s2 (compressed, about half the bytes) or none (env TURNLOG_COMPRESSION; default: keep existing, none when new)")
	fs.StringArrayVar(&f.cwdRoots, "cwd-root", filepath.SplitList(os.Getenv("TURNLOG_CWD_ROOTS")), "a directory under which a request's \"cwd\" data may lie for the template's file:, git: and prompt:cwd variables to read it (repeatable; env TURNLOG_CWD_ROOTS, a list like PATH; default: the directory the worker runs in; / allows any); a request with a cwd elsewhere fails, naming it. A profile's cwd_roots wins")
	fs.DurationVar(&f.idleSnapshot, "idle-snapshot", worker.DefaultIdleSnapshot, "save the snapshot of a cached conversation left unused this long, so its next load is short (negative: only when the cache lets go of it and at stop)")
}

// denyKeysOf denies the key directory of the data directory data (its
// keys and the HTTP token) to the template variables of the workers and
// of serve's previews.
func (f *workerFlags) denyKeysOf(data string) error {
	auth, err := filepath.Abs(natsauth.Dir(data))
	if err != nil {
		return err
	}
	f.denyDirs = []string{auth}
	return nil
}

// check reports a malformed setting before anything starts.
func (f *workerFlags) check() error {
	for _, e := range f.envErrs {
		if f.flags == nil || !f.flags.Changed(e.flag) {
			return e.err
		}
	}
	if c := f.compression; c != "" && c != "s2" && c != "none" {
		return fmt.Errorf("--compression %q: use s2 or none", c)
	}
	if f.ackWait != 0 && f.ackWait < worker.MinAckWait {
		return fmt.Errorf("--ack-wait %s (or TURNLOG_ACK_WAIT): use at least %s, the worker reports progress every third of it", f.ackWait, worker.MinAckWait)
	}
	return nil
}

func (f *workerFlags) logger(w io.Writer) (*slog.Logger, error) { return jsonLogger(w, f.logLevel) }

// jsonLogger is the log of turnlog's long-running commands (serve, worker,
// gateway): a JSON object a line on w, at level and above (--log-level),
// so that one log shipper reads them all alike.
func jsonLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: durationText})), nil
}

// durationText writes durations as Go's duration strings ("48.9ms"), as
// slog's text handler does: the JSON handler writes nanoseconds as a bare
// number, which readers of the logs took for seconds or milliseconds.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

func (f *workerFlags) logOptions() []eventlog.Option {
	var opts []eventlog.Option
	switch f.compression {
	case "s2":
		opts = append(opts, eventlog.WithCompression(jetstream.S2Compression))
	case "none":
		opts = append(opts, eventlog.WithCompression(jetstream.NoCompression))
	}
	if f.replicas > 0 {
		opts = append(opts, eventlog.WithReplicas(f.replicas))
	}
	if f.partitions > 0 {
		opts = append(opts, eventlog.WithPartitions(f.partitions))
	}
	if f.eventShards > 0 {
		opts = append(opts, eventlog.WithEventShards(f.eventShards))
	}
	return opts
}

// refusalLogger reports what the NATS server refuses a long-running
// process (a worker) as an ERROR: a person must give its credential the
// permission or find who misuses it. The process goes on.
func refusalLogger(logger *slog.Logger) nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			logger.Error("the NATS server refused a permission", "err", err)
			return
		}
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		logger.Warn("NATS", "err", err, "subject", subject)
	})
}

// runWorkers runs n workers on their own connections from dial, serves
// their metrics (and extra's, by path), and stops them when ctx ends.
//
// refusals, when not nil, watches dial's connections while each worker
// opens its log (see startRefusals).
func runWorkers(ctx context.Context, f *workerFlags, n int, dial func() (*nats.Conn, error), refusals *startRefusals, logOpts []eventlog.Option, logger *slog.Logger, extra map[string]http.Handler) error {
	if err := f.check(); err != nil {
		return err
	}
	profiles, err := profile.Load(f.profiles)
	if err != nil {
		return err
	}
	cwdRoots, err := absCwdRoots(f.cwdRoots)
	if err != nil {
		return err
	}
	if n <= 0 {
		<-ctx.Done()
		return nil
	}
	// A worker's steps are stored on the workers' subjects, whatever its
	// credential: the steps of the requests it serves are a worker's.
	logOpts = append(slices.Clone(logOpts), eventlog.WithWriterRole(string(natsauth.Worker)))
	mux := http.NewServeMux()
	for path, h := range extra {
		mux.Handle(path, h)
	}
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		nc, err := dial()
		if err != nil {
			return err
		}
		defer nc.Close()
		openCtx, opened := ctx, func() {}
		if refusals != nil {
			openCtx, opened = refusals.watch(ctx)
		}
		l, err := worker.OpenLog(openCtx, nc, logger, logOpts...)
		opened()
		if err != nil {
			if refusals != nil {
				return refusals.explain(err)
			}
			return err
		}
		host, _ := os.Hostname()
		w, err := worker.New(worker.Config{Log: l, Conn: nc, Profiles: profiles, Logger: logger, AckWait: f.ackWait,
			Name:       fmt.Sprintf("%s-%d-w%d", host, os.Getpid(), i+1),
			CacheBytes: int64(f.cacheBytes), IdleSnapshot: f.idleSnapshot, CwdRoots: cwdRoots, DenyDirs: f.denyDirs, Storage: f.storage})
		if err != nil {
			return err
		}
		path := "/metrics"
		if i > 0 {
			path = fmt.Sprintf("/metrics/w%d", i+1)
		}
		mux.Handle(path, w.Metrics().Handler())
		go func() { errs <- w.Run(ctx) }()
	}
	if f.metrics != "" {
		stop, err := serveMetrics(f.metrics, &f.metricsAuth, mux, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	var first error
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func newWorkerCmd() *cobra.Command {
	var (
		nf       natsFlags
		wf       workerFlags
		n        int
		examples bool
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Serve chat requests from NATS: run them through the middleware chain and record every step",
		Long: `worker pulls chat requests from turnlog.chat.<conversation>, runs each
through its profile's middleware chain and engine (tool loop included) and
appends every step to the conversation's events. Run as many workers, on as
many machines, as you like: requests of one conversation never interleave,
different conversations run in parallel, and a worker killed at any point
loses and duplicates nothing (the request is redelivered to another worker
within --ack-wait and resumes from the log). A worker started before NATS
waits for it, and one that loses the cluster logs it once and waits until it
is back. SIGTERM or Ctrl-C: finish the requests in hand (up to 30 s), hand back
the rest, exit.

It connects with the worker key of the data directory (./.turnlog/auth/worker.nk,
or under --data / TURNLOG_DATA) unless --creds, --nkey, --context or
TURNLOG_NATS_SEED names another credential: the worker role may consume
requests, append events and write snapshots, not erase or set templates.

--metrics (default 127.0.0.1:9090, env TURNLOG_METRICS) serves the
workers' Prometheus series only to requests that send a token as
"Authorization: Bearer <token>" (Prometheus: authorization.credentials_file);
others get 401. The token is TURNLOG_METRICS_TOKEN's, or the first line of
--metrics-token-file FILE (mode 0600; turnlog auth init --worker-env makes
one, metrics.token). Without either, the default listener stays off (the
worker logs so at start); a listener asked for (--metrics, TURNLOG_METRICS)
without a token is refused, and the worker does not start.

Profiles (--profiles FILE) say how to answer; without a file:

` + profile.DefaultYAML + `
--example-profiles prints example profiles (system prompt set-ups: a fixed
persona, prompt_policy: replace for a prompt the profile did not write, a
global prompt, an appended house style) to copy from.

This binary's providers: ` + strings.Join(profile.Engines(), ", ") + `.
Its middlewares: ` + strings.Join(profile.Middlewares(), ", ") + `.
Its tools (a profile's tools key): ` + strings.Join(profile.Tools(), ", ") + `.
A program of your own adds engines, middlewares and tools
(profile.RegisterEngine, profile.RegisterMiddleware, profile.RegisterTool)
and runs this command with them (cli.Main): see docs/library.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if examples {
				_, err := io.WriteString(cmd.OutOrStdout(), profile.ExamplesYAML)
				return err
			}
			// Before anything starts: a malformed setting, then a
			// worker that would serve its series to anyone, is refused.
			if err := wf.check(); err != nil {
				return err
			}
			// The default listener without a token stays off, said below;
			// one asked for is refused without one.
			metricsOff := ""
			if !cmd.Flags().Changed("metrics") && os.Getenv("TURNLOG_METRICS") == "" && !wf.metricsAuth.given() {
				metricsOff, wf.metrics = wf.metrics, ""
			}
			if err := wf.metricsAuth.workerToken(wf.metrics); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			logger, err := wf.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if metricsOff != "" {
				logger.Warn("metrics listener off: it serves its series only to a token, and none is set; set " + envMetricsToken + " or --metrics-token-file to serve them on " + metricsOff + " (--metrics '' silences this)")
			}
			stopTracing, err := startTracing(ctx, "turnlog-worker", wf.otel.content, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stopTracing()
			plan, err := nf.resolve()
			if err != nil {
				return err
			}
			refusals := &startRefusals{process: "turnlog worker", credential: plan.Credential, role: string(natsauth.Worker),
				need: natsauth.KeyFile(natsauth.Dir(nf.settings.Data()), natsauth.Worker)}
			dial := func() (*nats.Conn, error) {
				// The first connection is retried like later ones: a
				// worker started before its servers waits for them
				// (worker.OpenLog logs the wait); a refusal of its
				// credential ends the wait (refusals).
				return plan.Connect(nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
					nats.RetryOnFailedConnect(true), refusals.option(logger))
			}
			// On its own as under serve, a worker never lets a request's
			// cwd read the keys of its data directory into the log,
			// whatever its cwd roots allow.
			if err := wf.denyKeysOf(nf.settings.Data()); err != nil {
				return err
			}
			err = runWorkers(ctx, &wf, n, dial, refusals, append(wf.logOptions(), eventlog.WithPrefix(nf.prefix)), logger, nil)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	nf.asRole(natsauth.Worker).register(cmd.Flags())
	wf.register(cmd.Flags(), "127.0.0.1:9090", "the token of "+envMetricsToken+" or --metrics-token-file")
	wf.metricsAuth.registerWorkerToken(cmd.Flags())
	cmd.Flags().IntVar(&n, "workers", 1, "workers in this process")
	cmd.Flags().BoolVar(&examples, "example-profiles", false, "print example profiles (profile/examples.yaml) and exit")
	return cmd
}

// absCwdRoots makes the --cwd-root directories absolute; none means the
// directory the worker runs in, so that a request cannot point the
// template's variables at any directory the worker's user can read.
func absCwdRoots(roots []string) ([]string, error) {
	if len(roots) == 0 {
		roots = []string{"."}
	}
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if r == "" {
			continue
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("--cwd-root %q: %w", r, err)
		}
		out = append(out, abs)
	}
	return out, nil
}
