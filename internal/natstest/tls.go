package natstest

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TLSServer is how StartTLS runs its server.
type TLSServer struct {
	// Config is the server's TLS configuration: its certificate and,
	// for VerifyClients, the CAs (ClientCAs) its clients' certificates
	// must chain to.
	Config *tls.Config
	// VerifyClients refuses a client without a certificate Config.ClientCAs
	// trusts (nats-server's verify: true).
	VerifyClients bool
	// HandshakeFirst makes the server expect the TLS handshake before it
	// sends its INFO (nats-server's handshake_first, a client's tls_first).
	HandshakeFirst bool
}

// StartTLS runs a NATS server that accepts TLS connections only, without
// JetStream, for tests of how a client is configured for TLS. It returns
// the server's URL; tb.Cleanup shuts it down.
func StartTLS(tb testing.TB, s TLSServer) string {
	tb.Helper()
	cfg := s.Config.Clone()
	if s.VerifyClients {
		// The server verifies clients by its tls.Config, as its
		// configuration file's verify: true sets it.
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	ns, err := server.NewServer(&server.Options{
		Host:              "127.0.0.1",
		Port:              server.RANDOM_PORT,
		NoLog:             true,
		NoSigs:            true,
		TLS:               true,
		TLSConfig:         cfg,
		TLSVerify:         s.VerifyClients,
		TLSTimeout:        2,
		TLSHandshakeFirst: s.HandshakeFirst,
	})
	if err != nil {
		tb.Fatalf("natstest: TLS server: %v", err)
	}
	ns.Start()
	tb.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		tb.Fatalf("natstest: the TLS server did not start")
	}
	return "nats://" + ns.Addr().String()
}
