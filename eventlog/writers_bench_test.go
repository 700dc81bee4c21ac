package eventlog_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// BenchmarkWriterCheck is what one subject per writing role costs an
// append, on a stream that already holds 10,000 conversations of 2 steps
// each (legacy and role subjects mixed), in one run:
//
//   - literal: a raw publish with the expected-sequence check on the
//     message's own subject (how appends were checked before roles had
//     subjects);
//   - filter: the same with Nats-Expected-Last-Subject-Sequence-Subject
//     <prefix>.*.<conversation>, the wildcard check every append makes now;
//   - append: Append itself, as a worker (one message, no lookup);
//   - last: the conversation's last message by the wildcard (a direct get,
//     what a conflict or a load costs).
func BenchmarkWriterCheck(b *testing.B) {
	ctx := context.Background()
	srv := natstest.Start(b)
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithWriterRole("worker"))
	if err != nil {
		b.Fatal(err)
	}
	names := l.Names()
	const convs = 10_000
	for i := range convs {
		conv := "fill-" + strconv.Itoa(i)
		data, err := events.Encode(user(conv, "r", 0, benchText))
		if err != nil {
			b.Fatal(err)
		}
		// Half the conversations began before roles had subjects.
		subj := names.EventsRoleSubject(conv, "worker")
		if i%2 == 0 {
			subj = names.EventsSubject(conv)
		}
		ack, err := l.JetStream().Publish(ctx, subj, data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(ctx, conv, ack.Sequence, user(conv, conv, 1, benchText)); err != nil {
			b.Fatal(err)
		}
	}
	sample, err := events.Encode(user("x", "s", 0, benchText))
	if err != nil {
		b.Fatal(err)
	}
	run := 0
	raw := func(b *testing.B, filter bool) {
		run++
		conv := "raw-" + strconv.Itoa(run)
		var last uint64
		for i := 0; i < b.N; i++ {
			m := &nats.Msg{Subject: names.EventsRoleSubject(conv, "worker"), Data: sample, Header: nats.Header{
				jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(last, 10)},
				jetstream.MsgIDHeader:               []string{fmt.Sprintf("r%d:%d", run, i)}}}
			if filter {
				m.Header.Set(eventlog.ExpectedLastSubjSeqSubjHeader, names.EventsFilter(conv))
			}
			resp, err := srv.Conn.RequestMsg(m, 5*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if last, err = ackSeq(resp.Data); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("literal", func(b *testing.B) { raw(b, false) })
	b.Run("filter", func(b *testing.B) { raw(b, true) })
	b.Run("append", func(b *testing.B) {
		run++
		conv := "append-" + strconv.Itoa(run)
		evs := make([]events.Event, b.N)
		for i := range evs {
			evs[i] = user(conv, conv, i, benchText)
		}
		b.ResetTimer()
		var seq uint64
		for i := 0; i < b.N; i++ {
			if seq, err = l.Append(ctx, conv, seq, evs[i]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("last", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := l.LastSeq(ctx, "fill-"+strconv.Itoa(i%convs)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
