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

// TestGatewayWithTheClientKey: `turnlog gateway --creds client.nk`
// printed a permissions violation, then after 5s only "open event log:
// bucket TURNLOG_THREADS: context deadline exceeded". It stops at the
// refusal, and its error names it and the key the gateway needs.
func TestGatewayWithTheClientKey(t *testing.T) {
	s := startServe(t)
	client := natsauth.KeyFile(natsauth.Dir(s.data), natsauth.Client)
	out := &syncbuf.Buffer{}
	root := newRootCmd()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"gateway", "--listen", "127.0.0.1:0", "--data", s.data, "--nats-url", s.natsURL,
		"--creds", client, "--spool-dir", filepath.Join(t.TempDir(), "spool")})
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
		assert.Regexp(t, `^turnlog gateway: the NATS server refused the credential .*client.nk`, err.Error())
		assert.Less(t, time.Since(start), 4*time.Second, "it stops at the refusal, not at a timeout")
		assert.NotContains(t, out.String(), "gateway on http")
	case <-time.After(30 * time.Second):
		t.Fatalf("the gateway started with the client key:\n%s", out)
	}
}
