package eventlog_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// GetMany reads many threading entries at once, with the gateway's own
// credential (the worker role): the keys that have a value, not those
// never put nor those erased since.
func TestThreadsGetMany(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t, natstest.WithAuth())
	l, err := eventlog.Open(ctx, srv.ConnectAs(t, natsauth.Worker), eventlog.WithWriterRole(string(natsauth.Worker)))
	require.NoError(t, err)
	th, err := l.Threads(ctx)
	require.NoError(t, err)
	require.NoError(t, th.Put(ctx, map[string]string{"s.a": "conv-a@4", "s.b": "conv-b@6", "s.gone": "conv-c@2", "c.conv-a": "4"}))
	// Erased as erase does: a purge, which leaves a marker.
	js, err := jetstream.New(srv.Conn)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, l.Names().ThreadsBucket)
	require.NoError(t, err)
	require.NoError(t, kv.Purge(ctx, "s.gone"))

	got, err := th.GetMany(ctx, []string{"s.a", "s.missing", "s.b", "s.gone"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"s.a": "conv-a@4", "s.b": "conv-b@6"}, got)

	got, err = th.GetMany(ctx, []string{"s.none", "s.neither"})
	require.NoError(t, err)
	assert.Empty(t, got, "nothing found is no error")
}

// A threading bucket that does not allow direct gets (made by hand, or
// by an older client) is read key by key: no lookup fails for it.
func TestThreadsGetManyWithoutDirectGets(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	js, err := jetstream.New(srv.Conn)
	require.NoError(t, err)
	bucket := l.Names().ThreadsBucket
	// Open made the bucket as turnlog does; made again by hand.
	require.NoError(t, js.DeleteStream(ctx, "KV_"+bucket))
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_" + bucket, Subjects: []string{"$KV." + bucket + ".>"},
		MaxMsgsPerSubject: 1, AllowRollup: true, DenyDelete: true, Discard: jetstream.DiscardNew, AllowDirect: false})
	require.NoError(t, err)
	th, err := l.Threads(ctx)
	require.NoError(t, err)
	require.NoError(t, th.Put(ctx, map[string]string{"s.a": "conv-a@4"}))
	got, err := th.GetMany(ctx, []string{"s.a", "s.missing"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"s.a": "conv-a@4"}, got)
}
