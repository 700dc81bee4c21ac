package cli

// How every command connects to NATS. A command holds a natsFlags,
// registers it on its flag set, and calls connect:
//
//	var nf natsFlags
//	...
//	nc, l, err := nf.connect(ctx)                      // a command that writes
//	nc, l, err := nf.connect(ctx, eventlog.ReadOnly()) // a command that only reads
//	defer nc.Close()
//
// or, for a command that opens the log its own way, nc, err :=
// nf.dialFor(ctx, extra...). Long-running processes use nf.dial.
//
// connect resolves the server and the credential as the NATS tools do
// (flags, TURNLOG_NATS_* then NATS_* variables, --context, then, for the
// server, the address of the `turnlog serve` running on the data
// directory, else 127.0.0.1:4222, and, for the credential, the admin key
// in that data directory; see natsconn and servedURL), and a
// permission the server refuses ends the command at once with the
// server's reason instead of a timeout (see refusals.go).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/natsconn"
)

// natsFlags are the connection flags every client command takes.
type natsFlags struct {
	settings natsconn.Settings
	prefix   string
	// noDataFlag leaves --data to the command (chat's --data is request
	// data); the data directory then comes from TURNLOG_DATA or the
	// default.
	noDataFlag bool
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// asRole makes the command use role r's key from the data directory when
// no credential is named (default admin).
func (f *natsFlags) asRole(r natsauth.Role) *natsFlags {
	f.settings.Role = r
	return f
}

func (f *natsFlags) register(fs *pflag.FlagSet) {
	s := &f.settings
	role := s.Role
	if role == "" {
		role = natsauth.Admin
	}
	fs.StringVar(&s.URL, "nats-url", "", "NATS server URL(s), comma-separated (env TURNLOG_NATS_URL, then NATS_URL; default: where the turnlog serve running on the data directory listens, as its turnlog.lock says, else "+natsconn.DefaultURL+")")
	// The example is the least key that does the command's work: the
	// client's for the commands that read, whose default is the admin's.
	example := natsauth.Client
	if role == natsauth.Worker {
		example = natsauth.Worker
	}
	fs.StringVar(&s.Creds, "creds", "", "NATS credential: a .creds file or an nkey seed file such as .turnlog/auth/"+string(example)+".nk (env TURNLOG_NATS_CREDS, then NATS_CREDS; default: the "+string(role)+" key of the data directory)")
	fs.StringVar(&s.NKey, "nkey", "", "NATS nkey seed file, as nats --nkey (env TURNLOG_NATS_NKEY, then NATS_NKEY)")
	fs.StringVar(&s.Context, "context", "", "nats CLI context to take the server, credential and TLS settings from (~/.config/nats/context/NAME.json; env TURNLOG_NATS_CONTEXT, then NATS_CONTEXT)")
	fs.StringVar(&s.User, "user", "", "NATS user (env TURNLOG_NATS_USER, then NATS_USER)")
	fs.StringVar(&s.Password, "password", "", "NATS password (env TURNLOG_NATS_PASSWORD, then NATS_PASSWORD)")
	fs.StringVar(&s.TLSCA, "tls-ca", "", "CA certificate file to verify the NATS server (env TURNLOG_NATS_TLS_CA, then NATS_CA)")
	fs.StringVar(&s.TLSCert, "tls-cert", "", "TLS client certificate file (env NATS_CERT)")
	fs.StringVar(&s.TLSKey, "tls-key", "", "TLS client key file (env NATS_KEY)")
	fs.StringVar(&s.InboxPrefix, "inbox-prefix", "", "prefix of the connection's reply subjects (env TURNLOG_NATS_INBOX_PREFIX; default: _INBOX_<role> for a turnlog key <role>.nk, the only one its role may subscribe to)")
	if !f.noDataFlag {
		fs.StringVar(&s.DataDir, "data", "", "data `dir`ectory of turnlog serve, whose auth/"+string(role)+".nk is the credential when none is named (env TURNLOG_DATA; default "+natsconn.DefaultDataDir+")")
	}
	fs.StringVar(&f.prefix, "prefix", envOr("TURNLOG_PREFIX", eventlog.DefaultPrefix), "subject prefix and stream name stem (env TURNLOG_PREFIX)")
}

// resolve is the plan of the command's connection: its settings, and
// the serve running on its data directory when no URL was named.
func (f *natsFlags) resolve() (*natsconn.Plan, error) {
	s := f.settings
	s.Served = servedURL
	return s.Resolve()
}

// servedURL is where the `turnlog serve` holding data directory dir
// listens for NATS clients, as its lock file says, or "" when no process
// holds the directory (a lock file left by a server that died is not
// followed) or its server does not listen. A server listening on every
// address (0.0.0.0, ::) is reached on the loopback.
func servedURL(dir string) string {
	h, ok := embedded.Running(dir)
	if !ok || h.NATS == "" {
		return ""
	}
	u, err := url.Parse(h.NATS)
	if err != nil {
		return h.NATS
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		loopback := "127.0.0.1"
		if ip.To4() == nil {
			loopback = "::1"
		}
		u.Host = net.JoinHostPort(loopback, u.Port())
	}
	return u.String()
}

// dial connects with the resolved server and credential, plus extra
// options. Long-running processes (workers) use it with their own
// reconnect and error handling.
func (f *natsFlags) dial(extra ...nats.Option) (*nats.Conn, error) {
	plan, err := f.resolve()
	if err != nil {
		return nil, err
	}
	return plan.Connect(extra...)
}

// dialFor connects for one command (ctx is the command's), plus extra
// options: a permission the server refuses closes the connection, so the
// command ends at once, and the command's error becomes the server's
// reason (see refusals.go).
func (f *natsFlags) dialFor(ctx context.Context, extra ...nats.Option) (*nats.Conn, error) {
	plan, err := f.resolve()
	if err != nil {
		return nil, err
	}
	box := refusalsIn(ctx)
	refusal := nats.ErrorHandler(func(nc *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) && box != nil {
			if box.answered(err) {
				return
			}
			box.record(err, plan.Credential)
			go nc.Close()
			return
		}
		fmt.Fprintf(os.Stderr, "turnlog: NATS: %v\n", err)
	})
	return plan.Connect(append([]nats.Option{refusal}, extra...)...)
}

// connect dials NATS for one command and opens the log with opts. A
// permission the server refuses closes the connection, so the command
// ends at once, and the command's error becomes the server's reason.
func (f *natsFlags) connect(ctx context.Context, opts ...eventlog.Option) (*nats.Conn, *eventlog.Log, error) {
	nc, err := f.dialFor(ctx)
	if err != nil {
		return nil, nil, err
	}
	// turnlog's commands take operator actions (import, fork, repair,
	// prompt set) as the admin: with another role's credential the server
	// refuses them, rather than storing them as that role's.
	l, err := eventlog.Open(ctx, nc, append([]eventlog.Option{eventlog.WithPrefix(f.prefix), eventlog.WithWriterRole(eventlog.DefaultWriterRole)}, opts...)...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, l, nil
}
