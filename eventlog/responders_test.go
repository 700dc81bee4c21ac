package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestReadWaitsForDirectGetResponders: a read whose direct gets found no
// responder failed at once ("nats: no responders available for
// request"), as a reader on a replica catching up met it in a 3-node
// cluster (TestReadsFromALaggingReplicaMissNothing, under load). It now
// asks again for a few seconds: here the events stream answers no direct
// get for a second (allow_direct off, then on again), and the read
// returns what is stored.
func TestReadWaitsForDirectGetResponders(t *testing.T) {
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	_, err = l.Append(ctx, "back", 0, user("back", "r1", 0, "hello"))
	require.NoError(t, err)
	js, err := jetstream.New(srv.Conn)
	require.NoError(t, err)
	direct := func(on bool) error {
		s, err := js.Stream(ctx, l.Names().EventsStreamOf("back"))
		if err != nil {
			return err
		}
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = on
		_, err = js.UpdateStream(ctx, cfg)
		return err
	}
	require.NoError(t, direct(false))
	back := time.AfterFunc(time.Second, func() { assert.NoError(t, direct(true)) })
	defer back.Stop()

	n := 0
	for rec, err := range l.Events(ctx, "back") {
		require.NoError(t, err, "the read waits while no one answers its direct gets")
		assert.Equal(t, "r1", rec.Event.Cause)
		n++
	}
	assert.Equal(t, 1, n)
}
