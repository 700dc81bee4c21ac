package cli

// Which token the --metrics listener of serve and worker requires, and
// the listener itself. The series say what a backend runs (requests by
// outcome, findings by rule, its cache, its dead letters): they are not
// for every local user or network neighbour, so the listener serves them
// only to "Authorization: Bearer <token>", as turnlog gateway's /metrics
// does. serve's token is its HTTP API's; a worker, which may run on
// another host without a data directory, takes one of its own.

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/turnlog/turnlog/internal/bearer"
	"github.com/turnlog/turnlog/natsauth"
)

// envMetricsToken holds the token of a worker's --metrics listener itself
// (there is no flag for it: a command line is visible to every user of the
// machine).
const envMetricsToken = "TURNLOG_METRICS_TOKEN"

// metricsAuth is the token the --metrics listener requires.
type metricsAuth struct {
	// file is --metrics-token-file (worker only).
	file string
	// token is the token. It is "" only when open: serve --no-token
	// asked for a listener that serves anyone.
	token string
	open  bool
	// source says where the token comes from, in the listener's 401.
	source string
}

// registerWorkerToken adds worker's --metrics-token-file.
func (a *metricsAuth) registerWorkerToken(fs *pflag.FlagSet) {
	fs.StringVar(&a.file, "metrics-token-file", os.Getenv("TURNLOG_METRICS_TOKEN_FILE"), "`file` holding the token the --metrics listener requires as \"Authorization: Bearer <token>\" (Prometheus: authorization.credentials_file), mode 0600 (env TURNLOG_METRICS_TOKEN_FILE; or give the token itself in "+envMetricsToken+")")
}

// given reports whether a worker's token was given at all (its file, or
// TURNLOG_METRICS_TOKEN set).
func (a *metricsAuth) given() bool {
	return a.file != "" || os.Getenv(envMetricsToken) != ""
}

// workerToken resolves the token of a worker's --metrics listener
// (listen): TURNLOG_METRICS_TOKEN or --metrics-token-file. With neither
// the worker does not start: a listener without a token would serve its
// series to anyone who reaches it.
func (a *metricsAuth) workerToken(listen string) error {
	if listen == "" {
		return nil
	}
	env := strings.TrimSpace(os.Getenv(envMetricsToken))
	a.source = "the worker's metrics token (its " + envMetricsToken + " or --metrics-token-file)"
	switch {
	case a.file != "" && env != "":
		return fmt.Errorf("both %s and --metrics-token-file (or TURNLOG_METRICS_TOKEN_FILE) give the metrics token; keep one", envMetricsToken)
	case a.file != "":
		tok, err := natsauth.ReadMetricsToken(a.file)
		if err != nil {
			return fmt.Errorf("--metrics-token-file: %w", err)
		}
		a.token = tok
	case strings.ContainsAny(env, " \t\r\n"):
		return fmt.Errorf("%s holds white space; give the token alone", envMetricsToken)
	case env != "":
		a.token = env
	default:
		return fmt.Errorf("the metrics listener (--metrics %s, or TURNLOG_METRICS) serves only requests with a token, and none is set: set %s, or --metrics-token-file FILE (mode 0600), or turn the listener off with --metrics ''", listen, envMetricsToken)
	}
	return nil
}

// serveToken makes serve's HTTP API token (tok) the listener's; with
// --no-token (tok.value "") the series are served to anyone, with a
// warning on warn.
func (a *metricsAuth) serveToken(tok httpToken, listen string, warn func(string)) {
	a.token, a.open = tok.value, tok.value == ""
	a.source = "turnlog serve's token (the one in its data directory's auth/http.token, or the one it was given: TURNLOG_TOKEN or --token)"
	if a.open && listen != "" {
		warn(fmt.Sprintf("turnlog: WARNING: the metrics listener needs no token either (--no-token): anyone who can reach %s can read the series\n", listen))
	}
}

// handler is h behind the token: every path of the listener needs it.
func (a *metricsAuth) handler(h http.Handler) (http.Handler, error) {
	if a.token == "" {
		if !a.open {
			// A bug, not a setting: never an open listener by mistake.
			return nil, errors.New("the metrics listener has no token")
		}
		return h, nil
	}
	return bearer.Require(bearer.NewToken(a.token), a.source, h), nil
}

// serveMetrics serves h at listen, behind a's token, until the returned
// stop is called.
func serveMetrics(listen string, a *metricsAuth, h http.Handler, logger *slog.Logger) (stop func(), err error) {
	h, err = a.handler(h)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	logger.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics", "token", !a.open)
	return func() { srv.Close() }, nil
}
