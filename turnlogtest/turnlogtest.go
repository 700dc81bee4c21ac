// Package turnlogtest is what a program's own tests need to exercise its
// engines and middlewares against turnlog for real: an embedded NATS
// server with JetStream in the test's temp directory, shut down with the
// test; the event log on it; workers serving its profiles; and models
// that answer from a script, with no network.
//
// It is turnlog's own test harness (internal/natstest), exported: the
// same server turnlog's tests run on, never a mock of NATS. Importing it
// also registers the scripted engine (provider "scripted", the default).
package turnlogtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// Server is an embedded NATS server with JetStream, its data in a test's
// temp directory, and a connection to it.
type Server struct {
	*embedded.Server
	// Dir is the server's data directory.
	Dir string
	// Conn is connected to the server (in-process).
	Conn *nats.Conn
}

// StartServer starts a Server in tb.TempDir(); tb.Cleanup closes the
// connection and shuts the server down.
func StartServer(tb testing.TB) *Server {
	tb.Helper()
	s := natstest.Start(tb)
	return &Server{Server: s.Server, Dir: s.Dir, Conn: s.Conn}
}

// OpenLog opens turnlog's event log on the server (creating its streams).
func (s *Server) OpenLog(tb testing.TB) *eventlog.Log {
	tb.Helper()
	l, err := eventlog.Open(context.Background(), s.Conn)
	if err != nil {
		tb.Fatalf("turnlogtest: open the event log: %v", err)
	}
	return l
}

// OpenLog starts a Server and opens the event log on it: the one call a
// test of a chain that records through engine.Tx needs.
func OpenLog(tb testing.TB) *eventlog.Log {
	tb.Helper()
	return StartServer(tb).OpenLog(tb)
}

// StartWorker runs a worker on the server with profiles (parsed from
// YAML, so registered names resolve as in production) until the test
// ends, and returns the log it serves. tweak, if not nil, changes its
// Config before it starts.
func (s *Server) StartWorker(tb testing.TB, profilesYAML string, tweak func(*worker.Config)) *eventlog.Log {
	tb.Helper()
	set, err := profile.Parse([]byte(profilesYAML))
	if err != nil {
		tb.Fatalf("turnlogtest: %v", err)
	}
	l := s.OpenLog(tb)
	cfg := worker.Config{Log: l, Conn: s.Conn, Profiles: set, ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler)}
	if tweak != nil {
		tweak(&cfg)
	}
	w, err := worker.New(cfg)
	if err != nil {
		tb.Fatalf("turnlogtest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	tb.Cleanup(sync.OnceFunc(func() { cancel(); <-done }))
	return l
}

// Chat sends one chat request to conversation as any client would and
// waits (up to a minute) for its end; the result has the answer, or the
// reason request.failed recorded.
func Chat(tb testing.TB, l *eventlog.Log, conversation, text string) worker.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	turn, err := l.Load(ctx, conversation)
	if err != nil {
		tb.Fatalf("turnlogtest: load %s: %v", conversation, err)
	}
	req, err := worker.Send(ctx, l, worker.Request{Conversation: conversation, Text: text})
	if err != nil {
		tb.Fatalf("turnlogtest: send to %s: %v", conversation, err)
	}
	res, err := worker.Await(ctx, l, conversation, req.RequestID, turn.Seq, turn.Events)
	if err != nil && !errors.Is(err, worker.ErrFailed) {
		tb.Fatalf("turnlogtest: %s: %v", conversation, fmt.Errorf("await request %s: %w", req.RequestID, err))
	}
	return res
}
