package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// BenchmarkLoadSmall loads a 10-step conversation (no snapshot): the cost
// a worker pays on a cache miss, dominated by round trips.
func BenchmarkLoadSmall(b *testing.B) {
	benchSmallReads(b, openLog(&testing.T{}, natstest.Start(b)))
}

// BenchmarkLoadSmallCluster is BenchmarkLoadSmall on R3 streams of an
// in-process 3-node cluster, through a TCP connection: a read there must
// reach what the stream leader holds (docs/storage.md, "Reads").
func BenchmarkLoadSmallCluster(b *testing.B) {
	c := natstest.StartCluster(b, 3)
	nc := c.Dial(b, "bench")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var l *eventlog.Log
	if err := natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) (err error) {
		l, err = eventlog.Open(ctx, nc, eventlog.WithReplicas(3))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	benchSmallReads(b, l)
}

func benchSmallReads(b *testing.B, l *eventlog.Log) {
	ctx := context.Background()
	var seq uint64
	var err error
	for i := 0; i < 10; i++ {
		if seq, err = l.Append(ctx, "c", seq, user("c", "r", i, "hello")); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Load", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := l.Load(ctx, "c"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Events", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n := 0
			for _, err := range l.Events(ctx, "c") {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 10 {
				b.Fatalf("read %d events, want 10", n)
			}
		}
	})
	b.Run("LastSeq", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := l.LastSeq(ctx, "c"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Last", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := l.Last(ctx, "c"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
