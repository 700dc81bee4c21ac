package eventlog_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// inject stores msg as the server stores what it publishes to a reply
// subject, and returns its sequence.
func inject(t *testing.T, l *eventlog.Log, msg *nats.Msg) uint64 {
	t.Helper()
	ack, err := l.JetStream().PublishMsg(context.Background(), msg)
	require.NoError(t, err)
	return ack.Sequence
}

// echoOf is what nats-server publishes to the reply subject of a direct
// get of stream's message m: its data and headers, with the headers the
// server adds (Nats-Stream, Nats-Subject, Nats-Sequence,
// Nats-Time-Stamp). The copied Nats-Expected-* headers would have the
// events stream refuse it, so m is taken as an attacker makes it: a
// message of its own (a chat request) with a message ID and a step's
// data.
func echoOf(subject, stream string, seq uint64, data []byte, msgID string) *nats.Msg {
	return &nats.Msg{Subject: subject, Data: data, Header: nats.Header{
		jetstream.MsgIDHeader:    []string{msgID},
		jetstream.StreamHeader:   []string{stream},
		jetstream.SubjectHeader:  []string{"turnlog.chat.c"},
		jetstream.SequenceHeader: []string{strconv.FormatUint(seq, 10)},
		"Nats-Time-Stamp":        []string{time.Now().UTC().Format(time.RFC3339Nano)},
	}}
}

// TestForeignMessagesNeitherBlockNorEnterTheTurn: what the server
// publishes to a reply subject a client named on a conversation's events
// subjects (a JetStream API answer or PubAck, without headers; a direct
// get's copy of a message, with the server's Nats-Stream and
// Nats-Sequence) is not a step: every read skips it and reports it, the
// Turn is the one the steps make, and appends go on after it.
func TestForeignMessagesNeitherBlockNorEnterTheTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		scan uint64 // maxBatchScan: 0 follows the links
	}{
		{name: "batched read", scan: 1 << 20},
		{name: "walk by links", scan: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer eventlog.SetMaxBatchScan(tc.scan)()
			ctx := context.Background()
			srv := natstest.Start(t)
			admin := openLog(t, srv, eventlog.WithSnapshotEvery(1000))
			wl := openLog(t, srv, eventlog.WithWriterRole("worker"))
			names := admin.Names()
			seq, err := admin.Append(ctx, "c", 0, user("c", "r0", 0, "one"))
			require.NoError(t, err)
			seq, err = wl.Append(ctx, "c", seq, reply("c", "r0", 1, "two"))
			require.NoError(t, err)
			want, err := admin.Load(ctx, "c")
			require.NoError(t, err)
			step, err := admin.JetStream().Stream(ctx, names.EventsStream)
			require.NoError(t, err)
			stored, err := step.GetMsg(ctx, seq)
			require.NoError(t, err)

			// A STREAM.INFO answer on the admin's subject, a PubAck on the
			// worker's, and a direct get's echo of a message holding a
			// step's data on each (the attacker's forgery).
			info := inject(t, admin, &nats.Msg{Subject: names.EventsRoleSubject("c", "admin"),
				Data: []byte(`{"type":"io.nats.jetstream.api.v1.stream_info_response","config":{"name":"TURNLOG_EVENTS"}}`)})
			ack := inject(t, admin, &nats.Msg{Subject: names.EventsRoleSubject("c", "worker"),
				Data: []byte(`{"stream":"TURNLOG_REQUESTS","seq":7}`)})
			echoAdmin := inject(t, admin, echoOf(names.EventsRoleSubject("c", "admin"), names.RequestsStream, 3, stored.Data, "forged:0"))
			echoWorker := inject(t, admin, echoOf(names.EventsRoleSubject("c", "worker"), names.EventsStream, seq, stored.Data, "forged:1"))
			foreign := []uint64{info, ack, echoAdmin, echoWorker}

			turn, err := admin.Load(ctx, "c")
			require.NoError(t, err, "foreign messages do not block a load")
			assert.Equal(t, texts(want), texts(turn), "nor enter the Turn")
			assert.Equal(t, want.Events, turn.Events)
			assert.Equal(t, echoWorker, turn.Seq, "the Turn ends at the conversation's last message, which appends expect")

			tail, err := admin.Last(ctx, "c")
			require.NoError(t, err, "Last skips them")
			assert.Equal(t, echoWorker, tail.Seq)
			assert.Equal(t, seq, tail.StepSeq)
			assert.Equal(t, "r0", tail.Cause)
			assert.Equal(t, 1, tail.Step)

			// A step linked to a foreign message.
			seq, err = wl.Append(ctx, "c", turn.Seq, user("c", "r1", 0, "three"))
			require.NoError(t, err, "an append after them")
			seq, err = admin.Append(ctx, "c", seq, reply("c", "r1", 1, "four"))
			require.NoError(t, err)
			after := inject(t, admin, echoOf(names.EventsRoleSubject("c", "admin"), names.RequestsStream, 4, []byte(`{"text":"hi"}`), "forged:2"))
			foreign = append(foreign, after)

			turn, err = admin.Load(ctx, "c")
			require.NoError(t, err)
			assert.Equal(t, []string{"one", "two", "three", "four"}, texts(turn))
			assert.Equal(t, after, turn.Seq)
			caught, err := admin.CatchUp(ctx, want)
			require.NoError(t, err, "a catch-up over them")
			assert.Equal(t, texts(turn), texts(caught))
			assert.Equal(t, after, caught.Seq)
			at, err := admin.LoadAt(ctx, "c", 3)
			require.NoError(t, err)
			assert.Equal(t, []string{"one", "two", "three"}, texts(at))

			var got []string
			var pos []int
			for rec, err := range admin.Events(ctx, "c") {
				require.NoError(t, err, "Events yields the steps only")
				got = append(got, string(rec.Type))
				pos = append(pos, rec.Pos)
			}
			assert.Len(t, got, 4)
			assert.Equal(t, []int{1, 2, 3, 4}, pos)

			var reported []uint64
			steps := 0
			for rec, err := range admin.EventsWithForeign(ctx, "c") {
				var fe *eventlog.ForeignMessageError
				if errors.As(err, &fe) {
					assert.ErrorIs(t, err, eventlog.ErrForeignMessage)
					assert.Equal(t, rec.Seq, fe.Seq)
					reported = append(reported, fe.Seq)
					continue
				}
				require.NoError(t, err)
				steps++
			}
			assert.Equal(t, foreign, reported, "each foreign message is reported, in log order")
			assert.Equal(t, 4, steps)

			// A snapshot standing on a foreign message, and the history
			// cache, read the same.
			require.NoError(t, admin.SaveSnapshot(ctx, turn, "forged:2"))
			_, err = wl.Append(ctx, "c", turn.Seq, user("c", "r2", 0, "five"))
			require.NoError(t, err)
			turn, err = admin.Load(ctx, "c")
			require.NoError(t, err)
			assert.Equal(t, []string{"one", "two", "three", "four", "five"}, texts(turn))
			require.NoError(t, admin.RefreshHistory(ctx, "c"))
			n := 0
			for _, err := range admin.Events(ctx, "c") {
				require.NoError(t, err)
				n++
			}
			assert.Equal(t, 5, n)

			// A repair still removes them.
			plan, err := admin.PlanRepair(ctx, "c")
			require.NoError(t, err)
			var planned []uint64
			for _, c := range plan.Corrupt {
				planned = append(planned, c.Seq)
			}
			assert.Equal(t, foreign, planned)
			require.NoError(t, admin.RemoveCorrupt(ctx, plan, "repair-1", "operator:ada"))
			turn, err = admin.Load(ctx, "c")
			require.NoError(t, err)
			assert.Equal(t, []string{"one", "two", "three", "four", "five"}, texts(turn))
			for _, err := range admin.EventsWithForeign(ctx, "c") {
				assert.NotErrorIs(t, err, eventlog.ErrForeignMessage, "none left after the repair")
			}
		})
	}
}

// TestDamagedStepsStayQuarantined: a message with turnlog's headers (a
// message ID, a link) whose bytes do not decode is not foreign: it may be
// a damaged step, and reads still stop at it for a person to look.
func TestDamagedStepsStayQuarantined(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	seq, err := l.Append(ctx, "c", 0, user("c", "r0", 0, "one"))
	require.NoError(t, err)
	bad := inject(t, l, &nats.Msg{Subject: l.Names().EventsRoleSubject("c", "admin"), Data: []byte("garbage"), Header: nats.Header{
		jetstream.MsgIDHeader:               []string{"r1:0"},
		jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(seq, 10)},
	}})
	_, err = l.Load(ctx, "c")
	var q *eventlog.CorruptMessageError
	require.ErrorAs(t, err, &q)
	assert.Equal(t, bad, q.Seq)
	assert.NotErrorIs(t, err, eventlog.ErrForeignMessage)
}

// TestWatchWithForeignNamesThem: a live watch passes over a foreign
// message (Watch) or names it in log order and goes on
// (WatchWithForeign), and the events after it keep their positions.
func TestWatchWithForeignNamesThem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	names := l.Names()
	seq, err := l.Append(ctx, "w", 0, user("w", "r0", 0, "one"))
	require.NoError(t, err)
	turn, err := l.Load(ctx, "w")
	require.NoError(t, err)

	type seen struct {
		seq     uint64
		pos     int
		foreign bool
	}
	watch := func(with bool) <-chan seen {
		out := make(chan seen, 16)
		wctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		it := l.Watch(wctx, "w", turn.Seq, turn.Events)
		if with {
			it = l.WatchWithForeign(wctx, "w", turn.Seq, turn.Events)
		}
		go func() {
			for rec, err := range it {
				var fe *eventlog.ForeignMessageError
				if errors.As(err, &fe) {
					assert.Equal(t, rec.Seq, fe.Seq)
					out <- seen{seq: fe.Seq, foreign: true}
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				out <- seen{seq: rec.Seq, pos: rec.Pos}
			}
		}()
		return out
	}
	// Whenever a watch starts, it reads the log from turn.Seq on: it
	// finds what was stored before it subscribed.
	plain, named := watch(false), watch(true)

	bare := inject(t, l, &nats.Msg{Subject: names.EventsSubject("w"), Data: []byte("another client's publish")})
	echo := inject(t, l, echoOf(names.EventsRoleSubject("w", "admin"), names.RequestsStream, 3, []byte(`{"text":"hi"}`), "forged:w"))
	seq, err = l.Append(ctx, "w", echo, reply("w", "r0", 1, "two"))
	require.NoError(t, err)

	next := func(ch <-chan seen) seen {
		t.Helper()
		select {
		case s := <-ch:
			return s
		case <-ctx.Done():
			t.Fatal("the watch yielded nothing")
			return seen{}
		}
	}
	assert.Equal(t, seen{seq: bare, foreign: true}, next(named))
	assert.Equal(t, seen{seq: echo, foreign: true}, next(named))
	assert.Equal(t, seen{seq: seq, pos: 2}, next(named))
	assert.Equal(t, seen{seq: seq, pos: 2}, next(plain), "Watch passes over them")
}
