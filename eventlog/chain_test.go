package eventlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/projector"
)

// reads records the direct gets of the events stream that a client
// sends, as any other NATS client subscribed to the API subjects sees
// them.
type reads struct {
	t    *testing.T
	nc   *nats.Conn
	msgs chan *nats.Msg
}

// read is one direct get: of the last message of a subject, of the
// message at a sequence, or a batch.
type read struct {
	last  string // the subject whose last message was asked for
	seq   uint64
	batch bool
}

func spyReads(t *testing.T, srv *natstest.Server, l *eventlog.Log) *reads {
	t.Helper()
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	r := &reads{t: t, nc: nc, msgs: make(chan *nats.Msg, 1024)}
	api := "$JS.API.DIRECT.GET." + l.Names().EventsStreamOf("c")
	for _, subj := range []string{api, api + ".>"} {
		_, err := nc.ChanSubscribe(subj, r.msgs)
		require.NoError(t, err)
	}
	require.NoError(t, nc.Flush())
	return r
}

// take returns the direct gets seen since the last take.
func (r *reads) take() []read {
	r.t.Helper()
	require.NoError(r.t, r.nc.Flush())
	var out []read
	for {
		select {
		case m := <-r.msgs:
			var req struct {
				Seq   uint64 `json:"seq"`
				Batch int    `json:"batch"`
			}
			if len(m.Data) > 0 {
				require.NoError(r.t, json.Unmarshal(m.Data, &req))
			}
			if i := strings.Index(m.Subject, ".turnlog."); i >= 0 {
				out = append(out, read{last: m.Subject[i+1:]})
			} else {
				out = append(out, read{seq: req.Seq, batch: req.Batch > 0})
			}
		case <-time.After(50 * time.Millisecond):
			return out
		}
	}
}

// interleaved appends n one-event steps to conv, each after a step of
// another conversation, and returns conv's Turn and the sequences of its
// messages.
func interleaved(t *testing.T, l *eventlog.Log, conv string, n int, turn *projector.Turn) (*projector.Turn, []uint64) {
	t.Helper()
	ctx := context.Background()
	if turn == nil {
		turn = projector.New(conv)
	}
	var seqs []uint64
	for i := 0; i < n; i++ {
		other := "other-" + ulid.Make().String()
		_, err := l.Append(ctx, other, 0, user(other, ulid.Make().String(), 0, "noise"))
		require.NoError(t, err)
		e := user(conv, ulid.Make().String(), 0, fmt.Sprint(turn.Events))
		require.NoError(t, projector.Apply(turn, e))
		turn.Seq, err = l.Append(ctx, conv, turn.Seq, e)
		require.NoError(t, err)
		seqs = append(seqs, turn.Seq)
	}
	return turn, seqs
}

// TestLoadReadsOnlyTheConversationsMessages: a load asks the server for
// the conversation's last message, then for exactly the messages after its
// snapshot, by sequence; never for a batch, which makes the server scan
// other conversations' messages, and never for anything past the
// conversation's last message.
func TestLoadReadsOnlyTheConversationsMessages(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d event streams", shards), func(t *testing.T) {
			loadReadsOnlyTheConversationsMessages(t, shards)
		})
	}
}

func loadReadsOnlyTheConversationsMessages(t *testing.T, shards int) {
	defer eventlog.SetMaxBatchScan(0)() // links however small the stream
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv, eventlog.WithSnapshotEvery(5), eventlog.WithEventShards(shards))
	spy := spyReads(t, srv, l)
	subject := l.Names().EventsFilter("c")

	want, seqs := interleaved(t, l, "c", 6, nil)
	spy.take()

	t.Run("no snapshot: every message by its link", func(t *testing.T) {
		got, err := l.Load(ctx, "c") // 6 events: it leaves a snapshot
		require.NoError(t, err)
		sameTurn(t, want, got, "loaded")
		wantReads := []read{{last: subject}}
		for _, s := range slices.Backward(seqs[:len(seqs)-1]) {
			wantReads = append(wantReads, read{seq: s})
		}
		assert.Equal(t, wantReads, spy.take())
	})
	t.Run("snapshot at the last message: one read", func(t *testing.T) {
		got, err := l.Load(ctx, "c")
		require.NoError(t, err)
		sameTurn(t, want, got, "loaded")
		assert.Equal(t, []read{{last: subject}}, spy.take())
	})
	want, tail := interleaved(t, l, "c", 3, want)
	spy.take()
	t.Run("snapshot and a tail: the tail and the snapshot's message", func(t *testing.T) {
		got, err := l.Load(ctx, "c")
		require.NoError(t, err)
		sameTurn(t, want, got, "loaded")
		assert.Equal(t, []read{{last: subject}, {seq: tail[1]}, {seq: tail[0]}, {seq: seqs[len(seqs)-1]}}, spy.take())
	})
	t.Run("history: the cache the first load wrote, then the messages after it by their links", func(t *testing.T) {
		var got []string
		for r, err := range l.Events(ctx, "c") {
			require.NoError(t, err)
			got = append(got, r.Event.Payload.(events.UserAppended).Text)
		}
		assert.Equal(t, texts(want), got)
		assert.Equal(t, []read{{last: subject}, {seq: tail[1]}, {seq: tail[0]}, {seq: seqs[len(seqs)-1]}}, spy.take())
	})
	t.Run("catch-up from a Turn a few messages behind", func(t *testing.T) {
		behind, err := l.LoadAt(ctx, "c", 7)
		require.NoError(t, err)
		spy.take()
		caught, err := l.CatchUp(ctx, behind)
		require.NoError(t, err)
		sameTurn(t, want, caught, "caught up")
		assert.Equal(t, []read{{last: subject}, {seq: tail[1]}}, spy.take())
	})
}

// TestLoadWithoutLinksFallsBack: messages another client wrote without the
// link header still load, by the batched read.
func TestLoadWithoutLinksFallsBack(t *testing.T) {
	defer eventlog.SetMaxBatchScan(0)()
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	spy := spyReads(t, srv, l)
	want, _ := interleaved(t, l, "c", 2, nil)
	// A valid step published without an expected sequence (a message ID
	// it needs: without one it is not turnlog's, see foreign_test.go).
	e := user("c", "plain", 0, "without a link")
	require.NoError(t, projector.Apply(want, e))
	data, err := events.Encode(e)
	require.NoError(t, err)
	ack, err := l.JetStream().Publish(ctx, l.Names().EventsSubject("c"), data, jetstream.WithMsgID(eventlog.StepID("plain", 0)))
	require.NoError(t, err)
	want.Seq = ack.Sequence
	want, _ = interleaved(t, l, "c", 2, want)
	spy.take()

	got, err := l.Load(ctx, "c")
	require.NoError(t, err)
	sameTurn(t, want, got, "loaded")
	for _, n := range []int{2, 3, 5} {
		got, err := l.LoadAt(ctx, "c", n)
		require.NoError(t, err)
		assert.Equal(t, texts(want)[:n], texts(got), "load at %d", n)
	}
	assert.True(t, slices.ContainsFunc(spy.take(), func(r read) bool { return r.batch }), "the batched read was used")
}

// TestStaleSnapshotBelowTheLinks: a snapshot of a conversation that was
// erased and written anew, whose message the new messages' links pass by,
// is detected and ignored.
func TestStaleSnapshotBelowTheLinks(t *testing.T) {
	defer eventlog.SetMaxBatchScan(0)()
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv, eventlog.WithSnapshotEvery(1))
	interleaved(t, l, "c", 3, nil)
	_, err := l.Load(ctx, "c") // leaves a snapshot at the third message
	require.NoError(t, err)
	kv, err := l.JetStream().KeyValue(ctx, l.Names().SnapshotsBucket)
	require.NoError(t, err)
	snap, err := kv.Get(ctx, "c")
	require.NoError(t, err)

	_, err = l.Erase(ctx, "c")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "c", snap.Value()) // as if the erase had missed it
	require.NoError(t, err)
	want, _ := interleaved(t, l, "c", 4, projector.New("c"))

	got, err := l.Load(ctx, "c")
	require.NoError(t, err)
	sameTurn(t, want, got, "after the erase")
}

// TestShortDistancesUseOneBatch: when the messages after the base are
// close together in the stream, one batched read costs less than a round
// trip per message, and is what a load sends.
func TestShortDistancesUseOneBatch(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	spy := spyReads(t, srv, l)
	want, _ := interleaved(t, l, "c", 6, nil)
	spy.take()
	got, err := l.Load(ctx, "c")
	require.NoError(t, err)
	sameTurn(t, want, got, "loaded")
	assert.Equal(t, []read{{last: l.Names().EventsFilter("c")}, {seq: 1, batch: true}}, spy.take())
}
