package worker_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// natsCLI finds the nats CLI (.ci/run installs it with go install).
func natsCLI(t *testing.T) string {
	if p, err := exec.LookPath("nats"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(string(out[:len(out)-1]), "bin", "nats")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("the nats CLI is not installed; install it with: go install github.com/nats-io/natscli/nats@v0.5.1")
	return ""
}

// TestRequestFromTheNATSCLI: a chat request is plain JSON on a subject, so
// the nats CLI (or any client in any language) can send one with the
// client key, as README.md shows; the answer is in the conversation's
// events. Without a key the server refuses the CLI.
func TestRequestFromTheNATSCLI(t *testing.T) {
	cli := natsCLI(t)
	srv := natstest.Start(t, natstest.WithAuth())
	ctx := context.Background()
	_, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	wc := srv.ConnectAs(t, natsauth.Worker)
	startWorkerOn(t, wc)
	l, err := eventlog.Open(ctx, srv.ConnectAs(t, natsauth.Client), eventlog.ReadOnly())
	require.NoError(t, err)

	out, err := exec.Command(cli, "--server", srv.ClientURL(), "pub", "turnlog.chat.from-cli", `{"text": "without a key"}`).CombinedOutput()
	require.Error(t, err, "nats pub without a key must be refused: %s", out)
	assert.Contains(t, strings.ToLower(string(out)), "authorization violation")

	out, err = exec.Command(cli, "--server", srv.ClientURL(), "--nkey", srv.KeyFile(t, natsauth.Client),
		"pub", "turnlog.chat.from-cli", `{"text": "hello from the nats CLI"}`).CombinedOutput()
	require.NoError(t, err, "nats pub: %s", out)

	var answer string
	require.Eventually(t, func() bool {
		tail, err := l.Last(ctx, "from-cli")
		return err == nil && tail.Closed()
	}, 30*time.Second, 20*time.Millisecond)
	for rec, err := range l.Events(ctx, "from-cli") {
		require.NoError(t, err)
		if p, ok := rec.Payload.(events.LLMTextAppended); ok {
			answer = p.Text
		}
		assert.NotEqual(t, events.TypeRequestFailed, rec.Type)
	}
	assert.Equal(t, "You said: hello from the nats CLI", answer)

	// The client key may not write events, whatever the tool.
	out, err = exec.Command(cli, "--server", srv.ClientURL(), "--nkey", srv.KeyFile(t, natsauth.Client),
		"pub", "turnlog.events.from-cli", "garbage").CombinedOutput()
	assert.Contains(t, string(out), "Permissions Violation", "nats pub to an events subject with the client key: %v %s", err, out)
}

// startWorkerOn runs a worker with the default profiles on nc until the
// test ends.
func startWorkerOn(t *testing.T, nc *nats.Conn) {
	t.Helper()
	// A worker writes its steps on the workers' subjects, as `turnlog
	// worker` does: with the worker's key, the admin's are refused.
	l, err := eventlog.Open(context.Background(), nc, eventlog.WithWriterRole(string(natsauth.Worker)))
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
