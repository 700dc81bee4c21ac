package check_test

import (
	"fmt"
	"testing"

	"github.com/turnlog/turnlog/check"
)

// BenchmarkConversation checks a conversation of 1,000 requests (a call
// each, reasoning and an answer), whose last input has 3,001 blocks: what
// `turnlog ls` adds to its read of such a conversation (fold included).
// On the 2-core dev machine: 2.3 s/op checking every input from scratch,
// about 70 ms/op resuming from the previous call.
func BenchmarkConversation(b *testing.B) {
	r := &rec{}
	r.prompt("s", "be brief")
	for i := range 1000 {
		id := fmt.Sprint(i)
		r.user("u"+id, "question "+id).call().reasoning("r"+id, "think").answer("a"+id, "answer "+id)
	}
	b.ResetTimer()
	for b.Loop() {
		fs, calls, err := check.Conversation(r.evs)
		if err != nil || len(fs) != 0 || calls != 1000 {
			b.Fatal(err, len(fs), calls)
		}
	}
}
