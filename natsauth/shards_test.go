package natsauth_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/worker"
)

// shardConv finds a conversation that lives in shard k of n.
func shardConv(k, n int) string {
	for i := 0; ; i++ {
		if c := fmt.Sprintf("sh-%d", i); eventlog.ShardOf(c, n) == k {
			return c
		}
	}
}

// TestRolesWithEventShards: with 3 event streams, a worker creates them on
// a fresh server and appends to every shard, a client reads and follows
// every shard and sends requests, and neither is refused; a client still
// cannot write events to any shard, nor a worker erase them.
func TestRolesWithEventShards(t *testing.T) {
	const n = 3
	srv := natstest.Start(t, natstest.WithAuth(), natstest.WithEventShards(n))
	ctx := context.Background()

	wc := connectAs(t, srv, natsauth.Worker)
	wl := wc.open(t, eventlog.WithEventShards(n), eventlog.WithSnapshotEvery(1))
	for k := range n {
		c := shardConv(k, n)
		_, err := wl.Append(ctx, c, 0, userEvent(c, "r-"+c, 0, "hello"))
		require.NoError(t, err)
		_, err = wl.Load(ctx, c) // writes a snapshot
		require.NoError(t, err)
	}
	wc.assertNoRefusal(t)

	cc := connectAs(t, srv, natsauth.Client)
	cl := cc.open(t, eventlog.ReadOnly())
	assert.Equal(t, n, cl.Names().Shards(), "the client finds the recorded count")
	att, err := eventlog.Attach(cc.nc)
	require.NoError(t, err)
	for k := range n {
		c := shardConv(k, n)
		turn, err := cl.Load(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, 1, turn.Events)
		seq, err := att.LastSeq(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), seq, "an attached client (chat) finds shard %d", k)
		wctx, cancel := context.WithCancel(ctx)
		for rec, err := range att.Watch(wctx, c, 0, 0) {
			require.NoError(t, err)
			if rec.Pos == 1 {
				cancel()
			}
		}
		cancel()
	}
	_, err = worker.Send(ctx, cl, worker.Request{Conversation: "sh-x", Text: "hi"})
	require.NoError(t, err)
	cc.assertNoRefusal(t)

	for k := range n {
		c := shardConv(k, n)
		subject := cl.Names().EventsSubject(c)
		cc.expectRefused(t, `Publish to "`+subject+`"`, func(ctx context.Context) error {
			_, err := cl.JetStream().Publish(ctx, subject, []byte("garbage"))
			return err
		})
		wc.expectRefused(t, "$JS.API.STREAM.PURGE."+wl.Names().EventsStreamOf(c), func(ctx context.Context) error {
			_, err := wl.Erase(ctx, c)
			return err
		})
	}
}
