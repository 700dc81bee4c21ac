package cli

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/natsauth"
)

// TestCommandsWithTheClientKey: `turnlog gateway --creds client.nk`
// printed a permissions violation, then after 5s only "open event log:
// bucket TURNLOG_THREADS: context deadline exceeded"; `turnlog worker`
// with that key logged the server's refusals and "waiting for NATS and
// JetStream; retrying until they answer", and waited so for ever, though
// no retry can succeed with it. Each stops at the refusal, and its error
// names it and the key the command needs.
func TestCommandsWithTheClientKey(t *testing.T) {
	s := startServe(t)
	client := natsauth.KeyFile(natsauth.Dir(s.data), natsauth.Client)
	for _, tc := range []struct {
		command string
		args    []string
	}{
		{"gateway", []string{"--listen", "127.0.0.1:0", "--spool-dir", filepath.Join(t.TempDir(), "spool")}},
		{"worker", []string{"--metrics", ""}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			out := &syncbuf.Buffer{}
			root := newRootCmd()
			root.SetOut(out)
			root.SetErr(out)
			root.SetArgs(append([]string{tc.command, "--data", s.data, "--nats-url", s.natsURL, "--creds", client}, tc.args...))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- root.ExecuteContext(ctx) }()
			select {
			case err := <-done:
				require.Error(t, err, "%s", out)
				assert.Contains(t, err.Error(), "refused")
				assert.Contains(t, err.Error(), "worker key")
				assert.Contains(t, err.Error(), natsauth.KeyFile(natsauth.Dir(s.data), natsauth.Worker))
				assert.Regexp(t, `^turnlog `+tc.command+`: the NATS server refused the credential .*client.nk`, err.Error())
				assert.Less(t, time.Since(start), 4*time.Second, "it stops at the refusal, not at a timeout")
				assert.NotContains(t, out.String(), "gateway on http")
			case <-time.After(30 * time.Second):
				t.Fatalf("turnlog %s with the client key still runs after 30s:\n%s", tc.command, out)
			}
		})
	}
}
