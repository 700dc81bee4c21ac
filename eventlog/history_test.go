package eventlog_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/projector"
)

func historyTexts(t *testing.T, l *eventlog.Log, conv string) []string {
	t.Helper()
	var out []string
	for r, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		out = append(out, r.Event.Payload.(events.UserAppended).Text)
	}
	return out
}

// TestHistoryCache: a read of a whole history writes the conversation's
// history cache; the next read takes the messages from it and reads only
// the conversation's last message from the stream; a cache that is behind
// is completed from the stream; a cache that is corrupt, altered, or of a
// conversation since erased and written anew is ignored and written
// again; Erase deletes it.
func TestHistoryCache(t *testing.T) {
	defer eventlog.SetMaxBatchScan(0)()
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	spy := spyReads(t, srv, l)
	subject := l.Names().EventsFilter("c")
	kv, err := l.JetStream().KeyValue(ctx, l.Names().HistoryBucket)
	require.NoError(t, err)

	want, _ := interleaved(t, l, "c", 5, nil)
	spy.take()
	assert.Equal(t, texts(want), historyTexts(t, l, "c"))
	assert.Len(t, spy.take(), 5, "the first read follows the links")
	entry, err := kv.Get(ctx, "c")
	require.NoError(t, err, "and writes the cache")

	t.Run("current", func(t *testing.T) {
		assert.Equal(t, texts(want), historyTexts(t, l, "c"))
		assert.Equal(t, []read{{last: subject}}, spy.take())
	})
	t.Run("behind", func(t *testing.T) {
		var tail []uint64
		want, tail = interleaved(t, l, "c", 2, want)
		spy.take()
		assert.Equal(t, texts(want), historyTexts(t, l, "c"))
		assert.Equal(t, []read{{last: subject}, {seq: tail[0]}, {seq: tail[0] - 2}}, spy.take(), "the last, the one before, and the cache's last")
		assert.Equal(t, texts(want), historyTexts(t, l, "c"))
		assert.Equal(t, []read{{last: subject}}, spy.take(), "written again")
		entry, err = kv.Get(ctx, "c")
		require.NoError(t, err)
	})
	for _, tc := range []struct {
		name   string
		change func(v []byte) []byte
	}{
		{name: "corrupt", change: func(v []byte) []byte { v[len(v)-1] ^= 1; return v }},
		{name: "garbage", change: func([]byte) []byte { return []byte("garbage") }},
		{name: "the last message changed, checksum made again", change: func(v []byte) []byte { return eventlog.AlterHistoryCache(t, v, "last") }},
		{name: "a message dropped, checksum made again", change: func(v []byte) []byte { return eventlog.AlterHistoryCache(t, v, "drop") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kv.Put(ctx, "c", tc.change(append([]byte(nil), entry.Value()...)))
			require.NoError(t, err)
			assert.Equal(t, texts(want), historyTexts(t, l, "c"))
			assert.Len(t, spy.take(), 7, "read from the stream")
			assert.Equal(t, texts(want), historyTexts(t, l, "c"))
			assert.Equal(t, []read{{last: subject}}, spy.take(), "and cached again")
		})
	}
	t.Run("erased and written anew", func(t *testing.T) {
		old, err := kv.Get(ctx, "c")
		require.NoError(t, err)
		erased, err := l.Erase(ctx, "c")
		require.NoError(t, err)
		assert.True(t, erased.History)
		_, err = kv.Get(ctx, "c")
		assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "Erase deletes the cache")
		_, err = kv.Put(ctx, "c", old.Value()) // as if the erase had missed it
		require.NoError(t, err)
		fresh, _ := interleaved(t, l, "c", 3, projector.New("c"))
		assert.Equal(t, texts(fresh), historyTexts(t, l, "c"))
		got, err := l.LoadAt(ctx, "c", 3)
		require.NoError(t, err)
		sameTurn(t, fresh, got, "a load without a snapshot")
	})
}
