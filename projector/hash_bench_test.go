package projector_test

import (
	"fmt"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

func BenchmarkHash200(b *testing.B) {
	t := projector.New("c")
	for i := 0; i < 200; i++ {
		t.Blocks = append(t.Blocks, events.Block{ID: fmt.Sprintf("01ABCDEFGHJKMNPQRSTVWXYZ%02d", i), Kind: events.KindUser, Text: fmt.Sprintf("message %d with some typical text of a chat message, a hundred bytes or so long, ok", i), Meta: map[string]string{"section": "conversation"}})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		projector.Hash(t)
	}
}
