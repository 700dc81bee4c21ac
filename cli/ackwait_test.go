package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/worker"
)

// TestAckWaitRefusesBadValues: a malformed or too short --ack-wait or
// TURNLOG_ACK_WAIT stops `worker` and `serve` before they start, naming
// the setting and what to give.
func TestAckWaitRefusesBadValues(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{name: "worker flag not a duration", args: []string{"worker", "--ack-wait", "soon"},
			want: []string{`"soon"`, "--ack-wait"}},
		{name: "worker env not a duration", env: []string{"TURNLOG_ACK_WAIT=soon"}, args: []string{"worker"},
			want: []string{`TURNLOG_ACK_WAIT "soon"`, "use a duration such as 3s"}},
		{name: "worker flag too short", args: []string{"worker", "--ack-wait", "100ms"},
			want: []string{"--ack-wait 100ms", "use at least 300ms"}},
		{name: "worker flag negative", args: []string{"worker", "--ack-wait", "-3s"},
			want: []string{"--ack-wait -3s", "use at least 300ms"}},
		{name: "worker env too short", env: []string{"TURNLOG_ACK_WAIT=10ms"}, args: []string{"worker"},
			want: []string{"TURNLOG_ACK_WAIT", "use at least 300ms"}},
		{name: "serve flag not a duration", args: []string{"serve", "--data", data, "--ack-wait", "soon"},
			want: []string{`"soon"`, "--ack-wait"}},
		{name: "serve env not a duration", env: []string{"TURNLOG_ACK_WAIT=3"}, args: []string{"serve", "--data", data},
			want: []string{`TURNLOG_ACK_WAIT "3"`, "use a duration such as 3s"}},
		{name: "serve flag too short", args: []string{"serve", "--data", data, "--ack-wait", "1ms"},
			want: []string{"--ack-wait 1ms", "use at least 300ms"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Nothing listens there: a command that got past its
			// settings would wait for NATS, not fail.
			env := append([]string{"TURNLOG_NATS_URL=nats://127.0.0.1:1", "TURNLOG_METRICS=", "TURNLOG_LISTEN=127.0.0.1:0", "TURNLOG_HTTP="}, tc.env...)
			out, code := runCmd(t, env, "", tc.args...)
			assert.Equal(t, 2, code, out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assert.NotContains(t, out, "listening on", "serve started before it checked its settings")
		})
	}
}

// TestAckWaitReachesTheConsumers: the ack wait given to `worker` (flag or
// environment) and `serve` is the AckWait of the partition consumers, the
// longest a lost delivery holds a partition.
func TestAckWaitReachesTheConsumers(t *testing.T) {
	t.Run("worker flag", func(t *testing.T) {
		srv := natstest.Start(t)
		runWorkerCmd(t, nil, "--nats-url", srv.ClientURL(), "--ack-wait", "7s")
		assert.Equal(t, 7*time.Second, consumerAckWait(t, srv.Conn))
	})
	t.Run("worker env", func(t *testing.T) {
		srv := natstest.Start(t)
		runWorkerCmd(t, []string{"TURNLOG_ACK_WAIT=5s"}, "--nats-url", srv.ClientURL())
		assert.Equal(t, 5*time.Second, consumerAckWait(t, srv.Conn))
	})
	t.Run("worker flag over a malformed env", func(t *testing.T) {
		// The flag is what the user gave; the environment is only its
		// default, so its mistake does not stop the worker.
		srv := natstest.Start(t)
		runWorkerCmd(t, []string{"TURNLOG_ACK_WAIT=soon", "TURNLOG_CACHE_BYTES=lots"}, "--nats-url", srv.ClientURL(), "--ack-wait", "6s", "--cache-bytes", "64MiB")
		assert.Equal(t, 6*time.Second, consumerAckWait(t, srv.Conn))
	})
	t.Run("worker default", func(t *testing.T) {
		srv := natstest.Start(t)
		runWorkerCmd(t, nil, "--nats-url", srv.ClientURL())
		assert.Equal(t, worker.DefaultAckWait, consumerAckWait(t, srv.Conn))
	})
	t.Run("serve flag", func(t *testing.T) {
		s := startServe(t, "--no-auth", "--ack-wait", "4s")
		nc, err := nats.Connect(s.natsURL)
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		assert.Equal(t, 4*time.Second, consumerAckWait(t, nc))
	})
}

// runWorkerCmd runs `turnlog worker` with args and the environment env
// until the test ends.
func runWorkerCmd(t *testing.T, env []string, args ...string) {
	t.Helper()
	workerCmd(t, env, append([]string{"worker", "--metrics", "", "--log-level", "error"}, args...)...)
}

// workerCmd runs the command line args (a `turnlog worker`) with the
// environment env, and none of the connection's or the metrics' variables
// of the test's own, until the test ends, when it must have stopped
// cleanly; it returns the command's output.
func workerCmd(t *testing.T, env []string, args ...string) *syncbuf.Buffer {
	t.Helper()
	for _, k := range append(connectionEnv, "TURNLOG_METRICS_TOKEN", "TURNLOG_METRICS", "TURNLOG_METRICS_TOKEN_FILE") {
		t.Setenv(k, "")
	}
	t.Setenv("TURNLOG_DATA", t.TempDir()) // no keys: connect without credentials
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	root := newRootCmd()
	out := &syncbuf.Buffer{}
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "worker: %s", out.String())
	})
	return out
}

// consumerAckWait waits until a worker created the consumer of partition
// 0 and returns its AckWait.
func consumerAckWait(t *testing.T, nc *nats.Conn) time.Duration {
	t.Helper()
	l, err := eventlog.Attach(nc)
	require.NoError(t, err)
	name := worker.ConsumerName(l.Names(), 0)
	var got time.Duration
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cons, err := l.JetStream().Consumer(ctx, l.Names().RequestsStream, name)
		if err != nil {
			return false
		}
		got = cons.CachedInfo().Config.AckWait
		return true
	}, 30*time.Second, 50*time.Millisecond, "no consumer %s", name)
	return got
}
