package eventlog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestCompressionOption: WithCompression sets the events stream's
// compression, on a new stream and on an existing one; a log opened
// without it keeps what the stream has; events read back the same either
// way, across a server restart.
func TestCompressionOption(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	compression := func(l *eventlog.Log) jetstream.StoreCompression {
		s, err := l.JetStream().Stream(ctx, l.Names().EventsStream)
		require.NoError(t, err)
		return s.CachedInfo().Config.Compression
	}
	l := openLog(t, srv, eventlog.WithCompression(jetstream.S2Compression))
	assert.Equal(t, jetstream.S2Compression, compression(l))
	assert.Equal(t, jetstream.S2Compression, compression(openLog(t, srv)), "kept by a log opened without the option")

	var seq uint64
	var err error
	for i := 0; i < 20; i++ {
		seq, err = l.Append(ctx, "c", seq, user("c", "r", i, fmt.Sprintf("message %d, compressed", i)))
		require.NoError(t, err)
	}
	want, err := l.Load(ctx, "c")
	require.NoError(t, err)

	l = openLog(t, srv, eventlog.WithCompression(jetstream.NoCompression))
	assert.Equal(t, jetstream.NoCompression, compression(l), "changed on an existing stream")
	_, err = l.Append(ctx, "c", seq, user("c", "r", 20, "not compressed"))
	require.NoError(t, err)

	srv.Stop()
	l = openLog(t, natstest.StartIn(t, srv.Dir))
	got, err := l.LoadAt(ctx, "c", 20)
	require.NoError(t, err)
	sameTurn(t, want, got, "after a restart")

	_, err = eventlog.Open(ctx, srv.Conn, eventlog.WithCompression(7))
	assert.ErrorContains(t, err, "use none or s2")
}
