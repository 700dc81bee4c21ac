package eventlog_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// BenchmarkPublish compares raw JetStream sync publishes of a one-event
// step's size, with each header turnlog adds, against Append itself, on one
// in-process server in one run.
func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	srv := natstest.Start(b)
	l := openLog(&testing.T{}, srv)
	js := l.JetStream()
	sample, err := events.Encode(user("x", "s", 0, "a chat-sized user message, about one hundred and twenty bytes long, like most of them are."))
	if err != nil {
		b.Fatal(err)
	}
	run := 0
	pub := func(b *testing.B, subj string, hdr func(i int, last uint64) nats.Header) {
		run++
		subj = fmt.Sprintf("%s-%d", subj, run)
		var last uint64
		for i := 0; i < b.N; i++ {
			m := &nats.Msg{Subject: subj, Data: sample}
			if hdr != nil {
				m.Header = hdr(i, last)
			}
			ack, err := js.PublishMsg(ctx, m)
			if err != nil {
				b.Fatal(err)
			}
			last = ack.Sequence
		}
	}
	b.Run("raw", func(b *testing.B) { pub(b, "turnlog.events.raw", nil) })
	b.Run("expected-seq", func(b *testing.B) {
		pub(b, "turnlog.events.exp", func(i int, last uint64) nats.Header {
			return nats.Header{jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(last, 10)}}
		})
	})
	b.Run("msg-id", func(b *testing.B) {
		pub(b, "turnlog.events.id", func(i int, last uint64) nats.Header {
			return nats.Header{jetstream.MsgIDHeader: []string{fmt.Sprintf("r%d:%d", run, i)}}
		})
	})
	b.Run("both-headers", func(b *testing.B) {
		pub(b, "turnlog.events.both", func(i int, last uint64) nats.Header {
			return nats.Header{jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(last, 10)},
				jetstream.MsgIDHeader: []string{fmt.Sprintf("r%d:%d", run, i)}}
		})
	})
	b.Run("append", func(b *testing.B) {
		run++
		conv := fmt.Sprintf("append-%d", run)
		var seq uint64
		for i := 0; i < b.N; i++ {
			if seq, err = l.Append(ctx, conv, seq, user(conv, conv, i, "a chat-sized user message, about one hundred and twenty bytes long, like most of them are.")); err != nil {
				b.Fatal(err)
			}
		}
	})
}
