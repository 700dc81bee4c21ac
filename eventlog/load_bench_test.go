package eventlog_test

import (
	"context"
	"testing"

	"github.com/turnlog/turnlog/internal/natstest"
)

// BenchmarkLoadSmall loads a 10-step conversation (no snapshot): the cost
// a worker pays on a cache miss, dominated by round trips.
func BenchmarkLoadSmall(b *testing.B) {
	ctx := context.Background()
	l := openLog(&testing.T{}, natstest.Start(b))
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
