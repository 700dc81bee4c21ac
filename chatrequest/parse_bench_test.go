package chatrequest

import (
	"testing"
	"time"
)

// BenchmarkParse parses a request as `turnlog bench --workers` sends it:
// a client-chosen request ID, the conversation and the text.
func BenchmarkParse(b *testing.B) {
	data := []byte(`{"conversation":"tp1-42","request_id":"01KB0Q0ZK3V2J6A5X9C8B7D6E5","text":"message 7"}`)
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, problem := Parse(data, "tp1-42", 42, at, DefaultMaxTextBytes); problem != "" {
			b.Fatal(problem)
		}
	}
}
