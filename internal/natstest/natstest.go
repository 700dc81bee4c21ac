// Package natstest starts real embedded NATS servers with JetStream for
// tests: one place, shared by every package that needs NATS, never a mock.
package natstest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/embedded"
)

// Server is an embedded server in a test's temp dir with a connection to it.
type Server struct {
	*embedded.Server
	Dir  string
	Conn *nats.Conn
}

// Start runs an embedded JetStream server in tb.TempDir() and connects to
// it in-process; both are shut down by tb.Cleanup.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartIn(tb, tb.TempDir())
}

// StartIn is Start on a given data directory, to restart a server on the
// data a previous one left.
func StartIn(tb testing.TB, dir string) *Server {
	tb.Helper()
	srv, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		tb.Fatalf("start embedded NATS: %v", err)
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		tb.Fatalf("connect to embedded NATS: %v", err)
	}
	s := &Server{Server: srv, Dir: dir, Conn: nc}
	tb.Cleanup(s.Stop)
	return s
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
