package eventlog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/projector"
)

func openLog(t *testing.T, srv *natstest.Server, opts ...eventlog.Option) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(context.Background(), srv.Conn, opts...)
	require.NoError(t, err)
	return l
}

func user(conv, cause string, step int, text string) events.Event {
	return events.New(conv, cause, step, "test", events.UserAppended{BlockID: ulid.Make().String(), Text: text})
}

func reply(conv, cause string, step int, text string) events.Event {
	return events.New(conv, cause, step, "test", events.LLMTextAppended{BlockID: ulid.Make().String(), Text: text})
}

func texts(turn *projector.Turn) []string {
	var out []string
	for _, b := range turn.Blocks {
		out = append(out, b.Text)
	}
	return out
}

func TestRestartKeepsEverything(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	var seq uint64
	var err error
	for i := 0; i < 10; i++ {
		seq, err = l.Append(ctx, "durable", seq, user("durable", "r", i, fmt.Sprint(i)))
		require.NoError(t, err)
	}
	before, err := l.Load(ctx, "durable")
	require.NoError(t, err)
	srv.Stop()

	srv2 := natstest.StartIn(t, srv.Dir)
	l2 := openLog(t, srv2)
	after, err := l2.Load(ctx, "durable")
	require.NoError(t, err)
	assert.Equal(t, before.Blocks, after.Blocks)
	assert.Equal(t, before.Seq, after.Seq)
	_, err = l2.Append(ctx, "durable", after.Seq, user("durable", "r", 10, "after restart"))
	require.NoError(t, err)
}

func TestOpenIsIdempotent(t *testing.T) {
	srv := natstest.Start(t)
	openLog(t, srv)
	openLog(t, srv)
}

func TestCauseReusedAcrossConversationsIsRefused(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "a", 0, user("a", "same-request", 0, "in a"))
	require.NoError(t, err)

	_, err = l.Append(ctx, "b", 0, user("b", "same-request", 0, "in b"))
	assert.ErrorIs(t, err, eventlog.ErrCauseReused, "a silent duplicate drop would lose b's step")

	a, err := l.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"in a"}, texts(a))
}

func TestHostileConversationIDsAreRejected(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "victim", 0, user("victim", "r0", 0, "keep me"))
	require.NoError(t, err)

	for _, tc := range []struct{ name, id string }{
		{"dot widens the subject", "a.b"},
		{"star wildcard", "*"},
		{"full wildcard", ">"},
		{"empty", ""},
		{"control character", "a\x00b"},
		{"newline", "a\nb"},
		{"space", "a b"},
		{"too long", string(make([]byte, 129))},
		{"unicode", "cafè"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Append(ctx, tc.id, 0, user(tc.id, "r", 0, "x"))
			assert.ErrorIs(t, err, events.ErrInvalidConversationID)
			_, err = l.Load(ctx, tc.id)
			assert.ErrorIs(t, err, events.ErrInvalidConversationID)
			_, err = l.LastSeq(ctx, tc.id)
			assert.ErrorIs(t, err, events.ErrInvalidConversationID)
		})
	}
	turn, err := l.Load(ctx, "victim")
	require.NoError(t, err)
	assert.Equal(t, []string{"keep me"}, texts(turn), "nothing stored was changed")
	convs, err := l.Conversations(ctx)
	require.NoError(t, err)
	assert.Equal(t, []eventlog.Conversation{{ID: "victim", Messages: 1}}, convs)
}

func TestMalformedAppendsStoreNothing(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	seq, err := l.Append(ctx, "c", 0, user("c", "r0", 0, "keep me"))
	require.NoError(t, err)

	noCause := user("c", "r1", 0, "x")
	noCause.Cause = ""
	unknown := user("c", "r1", 0, "x")
	unknown.Type, unknown.Payload = "nope.happened", nil
	tests := []struct {
		name string
		evs  []events.Event
		want error
	}{
		{"no events", nil, events.ErrInvalid},
		{"event of another conversation", []events.Event{user("other", "r1", 0, "x")}, events.ErrInvalid},
		{"two steps in one message", []events.Event{user("c", "r1", 0, "x"), user("c", "r1", 1, "y")}, events.ErrInvalid},
		{"missing cause", []events.Event{noCause}, events.ErrInvalid},
		{"no payload", []events.Event{unknown}, events.ErrInvalid},
		{"empty block ID", []events.Event{events.New("c", "r1", 0, "t", events.UserAppended{Text: "x"})}, events.ErrInvalid},
		{"larger than a message", []events.Event{user("c", "r1", 0, string(make([]byte, 9<<20)))}, eventlog.ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Append(ctx, "c", seq, tc.evs...)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	turn, err := l.Load(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"keep me"}, texts(turn))
	assert.Equal(t, seq, turn.Seq)
}

// TestForeignGarbageOnASubjectIsReportedAndSkipped: what another client
// publishes (no message ID: not a turnlog step) is passed over by a load
// and named by EventsWithForeign; with a message ID it could be a damaged
// step, and a load stops at it, naming it.
func TestForeignGarbageOnASubjectIsReportedAndSkipped(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	_, err := l.Append(ctx, "c", 0, user("c", "r0", 0, "fine"))
	require.NoError(t, err)
	_, err = l.JetStream().Publish(ctx, l.Names().EventsSubject("c"), []byte(`{"not":"msgpack"}`))
	require.NoError(t, err)

	turn, err := l.Load(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"fine"}, texts(turn))
	var reported []error
	for _, err := range l.EventsWithForeign(ctx, "c") {
		if err != nil {
			reported = append(reported, err)
		}
	}
	require.Len(t, reported, 1)
	assert.ErrorIs(t, reported[0], eventlog.ErrForeignMessage)
	assert.Contains(t, reported[0].Error(), "message 2", "the report names the message")

	_, err = l.JetStream().Publish(ctx, l.Names().EventsSubject("c"), []byte(`{"not":"msgpack"}`), jetstream.WithMsgID("r1:0"))
	require.NoError(t, err)
	_, err = l.Load(ctx, "c")
	require.Error(t, err)
	assert.ErrorIs(t, err, events.ErrInvalid)
	assert.Contains(t, err.Error(), "message 3", "the error names the bad message")
}

func TestSnapshotIsOnlyACache(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv, eventlog.WithSnapshotEvery(2))
	var seq uint64
	var err error
	for i := 0; i < 6; i++ {
		seq, err = l.Append(ctx, "c", seq, user("c", "r", i, fmt.Sprint(i)))
		require.NoError(t, err)
	}
	want, err := l.Load(ctx, "c") // folds 6 events and writes a snapshot
	require.NoError(t, err)
	kv, err := l.JetStream().KeyValue(ctx, l.Names().SnapshotsBucket)
	require.NoError(t, err)
	entry, err := kv.Get(ctx, "c")
	require.NoError(t, err, "a load with a long tail leaves a snapshot")

	t.Run("used", func(t *testing.T) {
		got, err := l.Load(ctx, "c")
		require.NoError(t, err)
		sameTurn(t, want, got, "through the snapshot")
	})
	t.Run("corrupt bytes are ignored", func(t *testing.T) {
		bad := append([]byte{}, entry.Value()...)
		bad[len(bad)-1] ^= 0xff
		_, err := kv.Put(ctx, "c", bad)
		require.NoError(t, err)
		got, err := l.Load(ctx, "c")
		require.NoError(t, err)
		sameTurn(t, want, got, "after corrupting the snapshot")
	})
	t.Run("garbage is ignored", func(t *testing.T) {
		_, err := kv.Put(ctx, "c", []byte("garbage"))
		require.NoError(t, err)
		got, err := l.Load(ctx, "c")
		require.NoError(t, err)
		sameTurn(t, want, got, "after replacing the snapshot by garbage")
	})
	t.Run("a lying snapshot is detected", func(t *testing.T) {
		// A well-formed snapshot that claims a message the log does not
		// hold under that ID, as after an erase and a new conversation.
		fake := want.Clone()
		fake.Blocks = fake.Blocks[:1]
		require.NoError(t, l.SaveSnapshot(ctx, fake, "someone-else:0"))
		got, err := l.Load(ctx, "c")
		require.NoError(t, err)
		sameTurn(t, want, got, "after a stale snapshot")
	})
}

func TestWatchFollowsNewEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := openLog(t, natstest.Start(t))
	seq, err := l.Append(ctx, "c", 0, user("c", "r", 0, "before"))
	require.NoError(t, err)

	got := make(chan eventlog.Record)
	go func() {
		for rec, err := range l.Watch(ctx, "c", seq, 1) {
			if err != nil {
				return
			}
			got <- rec
		}
	}()
	_, err = l.Append(ctx, "c", seq, reply("c", "r", 1, "after"), reply("c", "r", 1, "and more"))
	require.NoError(t, err)
	first, second := <-got, <-got
	assert.Equal(t, 2, first.Pos)
	assert.Equal(t, "after", first.Payload.(events.LLMTextAppended).Text)
	assert.Equal(t, 3, second.Pos)
	assert.Equal(t, first.Seq, second.Seq, "one message, one step")
}

// TestARedoneStepWithOtherContentIsAConflict: the same step ID with other
// events (a step redone after a crash, or after a stale read) must not be
// taken for the stored one, or the caller would go on from a Turn the log
// does not hold.
func TestARedoneStepWithOtherContentIsAConflict(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "c", 0, reply("c", "r1", 0, "first answer"))
	require.NoError(t, err)
	_, err = l.Append(ctx, "c", 0, reply("c", "r1", 0, "another answer"))
	assert.ErrorIs(t, err, eventlog.ErrConflict)

	turn, err := l.Load(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"first answer"}, texts(turn))
}

// TestReadsOnALostConnectionFail: a conversation read through a connection
// that is gone is an error, never an empty conversation that a caller
// would take for the truth.
func TestReadsOnALostConnectionFail(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	nc, err := srv.Connect()
	require.NoError(t, err)
	l := openLog(t, &natstest.Server{Conn: nc})
	_, err = l.Append(ctx, "c", 0, user("c", "r1", 0, "hello"))
	require.NoError(t, err)
	nc.Close()

	_, err = l.Load(ctx, "c")
	assert.Error(t, err, "Load")
	for _, err := range l.Events(ctx, "c") {
		assert.Error(t, err, "Events")
	}
}
