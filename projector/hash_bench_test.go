package projector_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// turnOf returns a Turn of n user blocks of about a hundred bytes each,
// folded from events as a worker's Turn is.
func turnOf(tb testing.TB, n int) *projector.Turn {
	tb.Helper()
	t := projector.New("c")
	for i := 0; i < n; i++ {
		err := projector.Apply(t, events.New("c", "bench", i, "bench", events.UserAppended{BlockID: fmt.Sprintf("01ABCDEFGHJKMNPQRSTVWXYZ%02d", i),
			Text: fmt.Sprintf("message %d with some typical text of a chat message, a hundred bytes or so long, ok", i),
			Meta: map[string]string{"section": "conversation"}}))
		if err != nil {
			tb.Fatal(err)
		}
	}
	return t
}

// BenchmarkHash200 hashes a 200-block Turn that was never hashed before
// (no cached block digests): what a Turn loaded from a snapshot or built
// by hand costs on its first model call, and what replay --verify pays
// per model call.
func BenchmarkHash200(b *testing.B) {
	t := turnOf(b, 200)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		// A Turn of the same blocks without the cache the last call left.
		projector.Hash(&projector.Turn{Conversation: t.Conversation, Blocks: t.Blocks, Data: t.Data})
	}
}

// BenchmarkHash200Warm hashes a 200-block Turn whose previous 199 blocks
// were hashed before and one block was appended since: the worker's case,
// a model call on a Turn that the request's events grew by a block or two.
// The Turns are prepared (a clone of a hashed Turn, plus one appended
// block) outside the timer, a batch at a time, and collected before timing
// resumes so that the collector does not compete with the hashes.
func BenchmarkHash200Warm(b *testing.B) {
	base := turnOf(b, 199)
	projector.Hash(base)
	const batch = 64
	turns := make([]*projector.Turn, batch)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			for j := range turns {
				turns[j] = base.Clone()
				err := projector.Apply(turns[j], events.New("c", "bench", 200, "bench", events.UserAppended{BlockID: "01ABCDEFGHJKMNPQRSTVWXYZnew",
					Text: "the new message, the one block the previous hash did not cover", Meta: map[string]string{"section": "conversation"}}))
				if err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC() // not during the timed hashes: the clones are garbage
			b.StartTimer()
		}
		projector.Hash(turns[i%batch])
	}
}

// BenchmarkClone200 clones a hashed 200-block Turn, as the worker does with
// its cached Turn at the start of every request.
func BenchmarkClone200(b *testing.B) {
	t := turnOf(b, 200)
	projector.Hash(t)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		t.Clone()
	}
}
