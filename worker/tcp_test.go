package worker_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// tcpWorker runs a worker over a TCP connection that reconnects forever,
// as a worker on another machine would.
func tcpWorker(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	l, err := eventlog.Open(context.Background(), nc)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Log: l, Conn: nc, Profiles: profiles, AckWait: 2 * time.Second, ShutdownGrace: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func clientLog(t *testing.T, url string) *eventlog.Log {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	l, err := eventlog.Open(context.Background(), nc)
	require.NoError(t, err)
	return l
}
