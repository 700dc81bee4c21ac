// Package natstest starts real embedded NATS servers with JetStream for
// tests: one place, shared by every package that needs NATS, never a mock.
package natstest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/natsauth"
)

// Server is an embedded server in a test's temp dir with a connection to it.
type Server struct {
	*embedded.Server
	Dir  string
	Conn *nats.Conn
	// AuthDir holds the roles' keys when the server was started WithAuth,
	// else it is "".
	AuthDir string
}

// Option changes how Start and StartIn run the server.
type Option func(*settings)

type settings struct {
	auth        bool
	prefix      string
	maxPayload  int32
	eventShards int
	maxStore    int64
}

// WithAuth starts the server with authentication as `turnlog serve` does:
// keys for every role in <dir>/auth, each role in its account
// (natsauth.AccountOf) and within its permissions for the installation
// with the default prefix (or WithPrefix's). Conn then
// connects as admin; ConnectAs gives a connection of another role.
func WithAuth() Option { return func(s *settings) { s.auth = true } }

// WithPrefix sets the prefix whose subjects WithAuth's permissions name.
func WithPrefix(prefix string) Option { return func(s *settings) { s.prefix = prefix } }

// WithEventShards gives the roles of a server started WithAuth the
// permissions of an installation with n event streams.
func WithEventShards(n int) Option { return func(s *settings) { s.eventShards = n } }

// WithMaxPayload sets the largest message the server accepts, so a test
// can reach size limits (large snapshots) with small data.
func WithMaxPayload(n int32) Option { return func(s *settings) { s.maxPayload = n } }

// WithMaxStore sets the most bytes JetStream may store (max_store), so a
// test can fill the storage with little data.
func WithMaxStore(n int64) Option { return func(s *settings) { s.maxStore = n } }

// Start runs an embedded JetStream server in tb.TempDir() and connects to
// it in-process; both are shut down by tb.Cleanup.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	return StartIn(tb, tb.TempDir(), opts...)
}

// StartIn is Start on a given data directory, to restart a server on the
// data a previous one left.
func StartIn(tb testing.TB, dir string, opts ...Option) *Server {
	tb.Helper()
	st := settings{prefix: eventlog.DefaultPrefix}
	for _, o := range opts {
		o(&st)
	}
	// The streams' account as serve gives it, with authentication or
	// without: a directory served both ways keeps its streams.
	cfg := embedded.Config{DataDir: dir, Listen: "127.0.0.1:0", MaxPayload: st.maxPayload, MaxStore: st.maxStore, StreamsAccount: natsauth.Account}
	var authDir string
	if st.auth {
		authDir = natsauth.Dir(dir)
		if _, err := natsauth.Ensure(authDir); err != nil {
			tb.Fatalf("natstest: create keys: %v", err)
		}
		auth, err := natsauth.ServerAuth(authDir, eventlog.NamesFor(st.prefix).WithEventShards(st.eventShards))
		if err != nil {
			tb.Fatalf("natstest: load keys: %v", err)
		}
		cfg.Users, cfg.Accounts = auth.Users, auth.Accounts
	}
	srv, err := embedded.Start(cfg)
	if err != nil {
		tb.Fatalf("start embedded NATS: %v", err)
	}
	var connOpts []nats.Option
	if st.auth {
		o, err := nats.NkeyOptionFromSeed(natsauth.KeyFile(authDir, natsauth.Admin))
		if err != nil {
			srv.Shutdown()
			tb.Fatalf("natstest: admin key: %v", err)
		}
		connOpts = append(connOpts, o)
	}
	nc, err := srv.Connect(connOpts...)
	if err != nil {
		srv.Shutdown()
		tb.Fatalf("connect to embedded NATS: %v", err)
	}
	s := &Server{Server: srv, Dir: dir, Conn: nc, AuthDir: authDir}
	tb.Cleanup(s.Stop)
	return s
}

// KeyFile is the key file of role r on a server started WithAuth.
func (s *Server) KeyFile(tb testing.TB, r natsauth.Role) string {
	tb.Helper()
	if s.AuthDir == "" {
		tb.Fatalf("natstest: KeyFile(%s) on a server started without WithAuth", r)
	}
	return natsauth.KeyFile(s.AuthDir, r)
}

// ConnectAs opens a TCP connection as role r (on a server started WithAuth)
// with the role's inbox prefix and extra options, closed by tb.Cleanup.
func (s *Server) ConnectAs(tb testing.TB, r natsauth.Role, opts ...nats.Option) *nats.Conn {
	tb.Helper()
	key, err := nats.NkeyOptionFromSeed(s.KeyFile(tb, r))
	if err != nil {
		tb.Fatalf("natstest: key of %s: %v", r, err)
	}
	nc, err := nats.Connect(s.ClientURL(), append([]nats.Option{key, nats.Name("natstest-" + string(r)),
		nats.CustomInboxPrefix(natsauth.InboxPrefix(r))}, opts...)...)
	if err != nil {
		tb.Fatalf("natstest: connect as %s: %v", r, err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// Stop closes the connection and shuts the server down; calling it twice
// is harmless, so a test can stop a server early and restart on its Dir.
func (s *Server) Stop() {
	if s.Conn != nil {
		s.Conn.Close()
		s.Conn = nil
	}
	if s.Server != nil {
		s.Server.Shutdown()
		s.Server = nil
	}
}
