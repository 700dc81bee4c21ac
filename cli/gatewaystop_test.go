package cli

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
)

// TestAStoppedGatewayRemovesItsEntry: `turnlog gateway` returned as soon
// as its context ended, without waiting for Gateway.Run, and closed its
// NATS connection on the way out: the removal of its entry among the
// running gateways raced the close, and a gateway stopped with SIGTERM
// could stay listed ("not seen since") for a day.
func TestAStoppedGatewayRemovesItsEntry(t *testing.T) {
	s := startServe(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, s.adminConn(t))
	require.NoError(t, err)
	count := func() int {
		ps, err := l.ListGateways(ctx)
		require.NoError(t, err)
		return len(ps)
	}
	require.Eventually(t, func() bool { return count() == 1 }, 20*time.Second, 50*time.Millisecond, "serve's gateway")
	for i := range 8 {
		_, _, stop := startGatewayCmd(t, s)
		require.Eventually(t, func() bool { return count() == 2 }, 20*time.Second, 20*time.Millisecond, "run %d: listed", i)
		stop() // as the process's exit: the command has returned
		time.Sleep(300 * time.Millisecond)
		require.Equal(t, 1, count(), "run %d: the stopped gateway's entry was removed before the command returned", i)
	}
}
