package cli

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/natsauth"
)

// TestWorkerWithTheClientKey: `turnlog worker --creds client.nk` logged
// the server's refusals and "waiting for NATS and JetStream; retrying
// until they answer", and waited so for ever, though no retry can succeed
// with that key. It stops and says which key a worker needs.
func TestWorkerWithTheClientKey(t *testing.T) {
	s := startServe(t)
	client := natsauth.KeyFile(natsauth.Dir(s.data), natsauth.Client)
	out := &syncbuf.Buffer{}
	root := newRootCmd()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"worker", "--data", s.data, "--nats-url", s.natsURL, "--creds", client, "--metrics", ""})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	select {
	case err := <-done:
		require.Error(t, err, "%s", out)
		assert.Contains(t, err.Error(), "refused")
		assert.Contains(t, err.Error(), natsauth.KeyFile(natsauth.Dir(s.data), natsauth.Worker))
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker with the client key still waits after 30s:\n%s", out)
	}
}
