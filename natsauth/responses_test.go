package natsauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/worker"
)

// TestClientPingsLeaveNoResponseEntries: every request a client sends on
// a service it imports leaves an entry in turnlog's account until it is
// answered or the export's response threshold passes. The status ping was
// such a service and is never answered on its reply subject (workers say
// who they are on a subject of their own), so each ping with a reply kept
// an entry for 2 minutes (found by the security probe: 500,000 pings in
// 10 s took a serve from 58 MB to 770 MB). The ping reaches turnlog's
// account as a stream: no entry is made, and the workers still hear it.
func TestClientPingsLeaveNoResponseEntries(t *testing.T) {
	const n = 1000
	srv := natstest.Start(t, natstest.WithAuth())
	ctx := context.Background()
	wc := connectAs(t, srv, natsauth.Worker)
	startWorker(t, wc.open(t), wc.nc)
	cc := connectAs(t, srv, natsauth.Client)
	names := eventlog.NamesFor(eventlog.DefaultPrefix)
	acc, err := srv.NATS().LookupAccount(natsauth.Account)
	require.NoError(t, err)
	clients, err := srv.NATS().LookupAccount(natsauth.ClientsAccount)
	require.NoError(t, err)

	before := acc.NumPendingAllResponses()
	reply := natsauth.InboxPrefix(natsauth.Client) + ".ping"
	for range n {
		require.NoError(t, cc.nc.PublishRequest(names.WorkersPing(), reply, nil))
	}
	require.NoError(t, cc.nc.Flush())
	assert.Equal(t, before, acc.NumPendingAllResponses(), "response entries in %s after %d pings", natsauth.Account, n)
	assert.Zero(t, clients.NumPendingReverseResponses(), "reverse response entries in %s after %d pings", natsauth.ClientsAccount, n)

	// The workers still hear the client's ping.
	require.Eventually(t, func() bool {
		st, err := worker.Statuses(ctx, cc.nc, names, 200*time.Millisecond)
		return err == nil && len(st) > 0
	}, 20*time.Second, 10*time.Millisecond, "the worker tells the client who it is")
	cc.assertNoRefusal(t)
}
