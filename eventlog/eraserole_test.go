package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// TestEraseWithoutTheRightEnds: erase run with a credential that may not
// write the threading index (the client's) waited for ever on the write's
// acknowledgement, which the server, refusing the write, never sends: the
// command hung without a word. It now ends with an error that says why.
func TestEraseWithoutTheRightEnds(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth())
	ctx := context.Background()
	admin, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	_, err = admin.Threads(ctx)
	require.NoError(t, err)
	client, err := eventlog.Open(ctx, srv.ConnectAs(t, natsauth.Client), eventlog.ReadOnly())
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { _, err := client.Erase(ctx, "demo"); done <- err }()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "erase demo")
	case <-time.After(time.Minute):
		t.Fatal("erase with the client's credential still waits after a minute")
	}
}
