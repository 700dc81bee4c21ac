package eventlog_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

const benchText = "a chat-sized user message, about one hundred and twenty bytes long, like most of them are."

// BenchmarkPublish compares raw JetStream sync publishes of a one-event
// step's size, with each header turnlog adds, against Append itself, on one
// in-process server in one run.
//
// The -conn cases send the same messages through nats.Conn.RequestMsg and
// read the acknowledgement by hand, as Append does, instead of through
// jetstream.PublishMsg (a context with a timeout and a JSON decode per
// call): raw-conn against both-headers-conn is what the server charges for
// the two headers, and both-headers-conn is the floor for Append, which
// adds building the headers, validating and encoding the event.
// append-built excludes building the event (a ULID and a clock read), which
// append and `turnlog bench` include.
func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	srv := natstest.Start(b)
	l := openLog(&testing.T{}, srv)
	js := l.JetStream()
	sample, err := events.Encode(user("x", "s", 0, benchText))
	if err != nil {
		b.Fatal(err)
	}
	run := 0
	// publish sends m and returns its sequence: through jetstream.PublishMsg
	// (viaJS) or straight through the connection, parsing the ack.
	publish := func(b *testing.B, m *nats.Msg, viaJS bool) uint64 {
		if viaJS {
			ack, err := js.PublishMsg(ctx, m)
			if err != nil {
				b.Fatal(err)
			}
			return ack.Sequence
		}
		resp, err := srv.Conn.RequestMsg(m, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		seq, err := ackSeq(resp.Data)
		if err != nil {
			b.Fatal(err)
		}
		return seq
	}
	loop := func(b *testing.B, subj string, hdr func(i int, last uint64) nats.Header, viaJS bool) {
		run++
		subj = fmt.Sprintf("%s-%d", subj, run)
		var last uint64
		for i := 0; i < b.N; i++ {
			m := &nats.Msg{Subject: subj, Data: sample}
			if hdr != nil {
				m.Header = hdr(i, last)
			}
			last = publish(b, m, viaJS)
		}
	}
	pub := func(b *testing.B, subj string, hdr func(i int, last uint64) nats.Header) { loop(b, subj, hdr, true) }
	conn := func(b *testing.B, subj string, hdr func(i int, last uint64) nats.Header) { loop(b, subj, hdr, false) }
	both := func(i int, last uint64) nats.Header {
		return nats.Header{jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(last, 10)},
			jetstream.MsgIDHeader: []string{fmt.Sprintf("r%d:%d", run, i)}}
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
	b.Run("both-headers", func(b *testing.B) { pub(b, "turnlog.events.both", both) })
	b.Run("raw-conn", func(b *testing.B) { conn(b, "turnlog.events.rawconn", nil) })
	b.Run("both-headers-conn", func(b *testing.B) { conn(b, "turnlog.events.bothconn", both) })
	b.Run("append", func(b *testing.B) {
		run++
		conv := fmt.Sprintf("append-%d", run)
		var seq uint64
		for i := 0; i < b.N; i++ {
			if seq, err = l.Append(ctx, conv, seq, user(conv, conv, i, benchText)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append-built", func(b *testing.B) {
		run++
		conv := fmt.Sprintf("append-%d", run)
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
}

// BenchmarkAppendVsRaw measures issue 2's ratio on a busy machine: one
// operation is a raw JetStream sync publish of a one-event step's size (no
// headers, as `turnlog bench` does it) and a one-event Append, interleaved
// in blocks of 100 so that both see the same load. It reports each one's
// time per call and append/raw, the throughput of Append over that of the
// raw publish, as the median over blocks. Building the event is not timed.
func BenchmarkAppendVsRaw(b *testing.B) {
	ctx := context.Background()
	l := openLog(&testing.T{}, natstest.Start(b))
	js := l.JetStream()
	sample, err := events.Encode(user("x", "s", 0, benchText))
	if err != nil {
		b.Fatal(err)
	}
	const block = 100
	var rawT, appT time.Duration
	var ratios []float64
	var seq uint64
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(block, b.N-done)
		var raw, app time.Duration
		for i := 0; i < n; i++ {
			t0 := time.Now()
			if _, err := js.Publish(ctx, "turnlog.events.raw-publish", sample); err != nil {
				b.Fatal(err)
			}
			raw += time.Since(t0)
			e := user("vs-raw", "a", done+i, benchText)
			t0 = time.Now()
			if seq, err = l.Append(ctx, "vs-raw", seq, e); err != nil {
				b.Fatal(err)
			}
			app += time.Since(t0)
		}
		rawT, appT = rawT+raw, appT+app
		ratios = append(ratios, float64(raw)/float64(app))
		done += n
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(rawT.Microseconds())/float64(b.N), "raw-µs/op")
	b.ReportMetric(float64(appT.Microseconds())/float64(b.N), "append-µs/op")
	b.ReportMetric(ratios[len(ratios)/2], "append/raw")
}

// ackSeq reads the sequence of a JetStream publish acknowledgement.
func ackSeq(data []byte) (uint64, error) {
	i := bytes.Index(data, []byte(`"seq":`))
	if i < 0 || bytes.Contains(data, []byte(`"error"`)) {
		return 0, fmt.Errorf("publish: %s", data)
	}
	var seq uint64
	for _, c := range data[i+len(`"seq":`):] {
		if c < '0' || c > '9' {
			break
		}
		seq = seq*10 + uint64(c-'0')
	}
	return seq, nil
}
