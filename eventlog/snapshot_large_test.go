package eventlog_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/projector"
)

// smallPayload is the max payload of the server the large snapshot tests
// run on: a Turn of a few MiB is then "too large for one message", as a
// 40 MB one is on the default 8 MiB server, at a fraction of the time. Not
// smaller: the embedded server lets a client fall behind by 8 payloads
// before it drops it as a slow consumer, and a flow-controlled object read
// may have several MiB in flight.
const smallPayload = 1 << 20

// openSmallPayloadLog opens a log on an embedded server in tb.TempDir()
// whose max payload is smallPayload; warnings go to the returned recorder.
func openSmallPayloadLog(tb testing.TB, opts ...eventlog.Option) (*eventlog.Log, *warnings) {
	tb.Helper()
	srv, err := embedded.Start(embedded.Config{DataDir: tb.TempDir(), MaxPayload: smallPayload})
	require.NoError(tb, err)
	tb.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	require.NoError(tb, err)
	tb.Cleanup(nc.Close)
	w := &warnings{}
	l, err := eventlog.Open(context.Background(), nc, append(opts, eventlog.WithLogger(slog.New(w)))...)
	require.NoError(tb, err)
	return l, w
}

// warnings is a slog.Handler that keeps the messages logged.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}

// take returns the messages logged since the last call.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// writeLarge appends steps of 256 KiB texts to conv until its Turn is
// several times smallPayload, and returns the Turn and its last message ID.
func writeLarge(t *testing.T, l *eventlog.Log, conv string) (*projector.Turn, string) {
	t.Helper()
	ctx := context.Background()
	var seq uint64
	var err error
	for i := 0; i < 12; i++ {
		text := fmt.Sprintf("%d %s", i, strings.Repeat("lorem ipsum ", 256<<10/12))
		seq, err = l.Append(ctx, conv, seq, user(conv, "r-"+conv, i, text))
		require.NoError(t, err)
	}
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	last, err := l.Last(ctx, conv)
	require.NoError(t, err)
	return turn, eventlog.StepID(last.Cause, last.Step)
}

// replace overwrites an object with b, in chunks the small server takes.
func replace(t *testing.T, obs jetstream.ObjectStore, name string, b []byte) {
	t.Helper()
	meta := jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: smallPayload / 2}}
	_, err := obs.Put(context.Background(), meta, bytes.NewReader(b))
	require.NoError(t, err)
}

// marked is turn with its first block's text changed: a snapshot the log
// would not give, so a Load that returns it read the snapshot.
func marked(turn *projector.Turn) *projector.Turn {
	m := turn.Clone()
	m.Blocks[0].Text = "from the snapshot " + m.Blocks[0].Text
	return m
}

func TestLargeSnapshot(t *testing.T) {
	ctx := context.Background()
	l, warned := openSmallPayloadLog(t, eventlog.WithSnapshotEvery(5))
	js := l.JetStream()
	kv, err := js.KeyValue(ctx, l.Names().SnapshotsBucket)
	require.NoError(t, err)
	obs, err := js.ObjectStore(ctx, l.Names().SnapshotObjectsBucket)
	require.NoError(t, err)

	want, lastID := writeLarge(t, l, "c") // the load folded 12 events: a snapshot
	other, otherLastID := writeLarge(t, l, "other")
	require.Empty(t, warned.take(), "the loads saved their large snapshots")

	// Each case starts from a large snapshot that Load would return.
	saveLarge := func(t *testing.T) *projector.Turn {
		t.Helper()
		snap := marked(want)
		require.NoError(t, l.SaveSnapshot(ctx, snap, lastID))
		return snap
	}

	t.Run("saved by a load, read back", func(t *testing.T) {
		entry, err := kv.Get(ctx, "c")
		require.NoError(t, err)
		assert.Less(t, len(entry.Value()), 1024, "the bucket holds a reference, not the Turn")
		info, err := obs.GetInfo(ctx, "c")
		require.NoError(t, err)
		assert.Greater(t, info.Size, uint64(smallPayload))

		snap := saveLarge(t)
		got, err := l.Load(ctx, "c")
		require.NoError(t, err)
		sameTurn(t, snap, got, "through the large snapshot")
		assert.Equal(t, snap.Seq, got.Seq)
		assert.Empty(t, warned.take())
	})

	ignored := []struct {
		name  string
		spoil func(t *testing.T)
	}{
		{"missing object", func(t *testing.T) {
			require.NoError(t, obs.Delete(ctx, "c"))
		}},
		{"short object", func(t *testing.T) {
			b, err := obs.GetBytes(ctx, "c")
			require.NoError(t, err)
			replace(t, obs, "c", b[:len(b)/2])
		}},
		{"corrupt object", func(t *testing.T) {
			b, err := obs.GetBytes(ctx, "c")
			require.NoError(t, err)
			b[len(b)/2] ^= 0xff
			replace(t, obs, "c", b)
		}},
		{"corrupt chunks under a right digest", func(t *testing.T) {
			// A chunk more than the object's metadata says: the client
			// reads bytes that no longer hash to the digest.
			info, err := obs.GetInfo(ctx, "c")
			require.NoError(t, err)
			bucket := l.Names().SnapshotObjectsBucket
			_, err = js.Publish(ctx, "$O."+bucket+".C."+info.NUID, []byte("garbage"))
			require.NoError(t, err)
		}},
		{"object of another conversation", func(t *testing.T) {
			// c's value now refers, with the right size and digest, to
			// the object of "other".
			require.NoError(t, l.SaveSnapshot(ctx, other, otherLastID))
			entry, err := kv.Get(ctx, "other")
			require.NoError(t, err)
			_, err = kv.Put(ctx, "c", entry.Value())
			require.NoError(t, err)
		}},
	}
	for _, tc := range ignored {
		t.Run(tc.name+" is ignored", func(t *testing.T) {
			saveLarge(t)
			warned.take()
			tc.spoil(t)
			got, err := l.Load(ctx, "c")
			require.NoError(t, err)
			sameTurn(t, want, got, "folded from the log")
			msgs := warned.take()
			assert.NotEmpty(t, msgs, "the ignored snapshot is reported")
			t.Log(msgs)
		})
	}

	t.Run("a small snapshot after a large one deletes the object", func(t *testing.T) {
		saveLarge(t)
		small := want.Clone()
		small.Blocks = small.Blocks[:1]
		require.NoError(t, l.SaveSnapshot(ctx, small, lastID))
		_, err := obs.GetInfo(ctx, "c")
		assert.ErrorIs(t, err, jetstream.ErrObjectNotFound)
		got, err := l.Load(ctx, "c")
		require.NoError(t, err)
		sameTurn(t, small, got, "through the small snapshot")
		assert.Empty(t, warned.take())
	})

	t.Run("erase deletes the object", func(t *testing.T) {
		saveLarge(t)
		got, err := l.Erase(ctx, "c")
		require.NoError(t, err)
		assert.Equal(t, eventlog.Erased{Messages: 12, Snapshot: true}, got)
		_, err = obs.GetInfo(ctx, "c")
		assert.ErrorIs(t, err, jetstream.ErrObjectNotFound)
		_, err = kv.Get(ctx, "c")
		assert.ErrorIs(t, err, jetstream.ErrKeyNotFound)
		st, err := obs.Status(ctx)
		require.NoError(t, err)
		kept, err := obs.GetInfo(ctx, "other")
		require.NoError(t, err)
		assert.Less(t, st.Size(), 2*kept.Size, "only the other conversation's chunks are left")

		gone, err := l.Load(ctx, "c")
		require.NoError(t, err)
		assert.Zero(t, gone.Events)
	})
}
