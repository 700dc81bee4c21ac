package worker

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"pgregory.net/rapid"
)

// TestDeltaJSONMatchesEncodingJSON: the hand-written encoding of a Delta
// is encoding/json's, byte for byte, for any text (control characters,
// quotes, HTML, invalid UTF-8, line separators) and any kind.
func TestDeltaJSONMatchesEncodingJSON(t *testing.T) {
	for _, text := range []string{"", "plain", `"quoted" \ back`, "<b>&amp;</b>", "tab\tnew\nline\r\b\f\x00\x1f\x7f",
		"é ✓ 😀", "bad \xff\xfe utf8", "sep \u2028 \u2029", "\xed\xa0\x80"} {
		d := Delta{RequestID: "01J00000000000000000000001", Kind: events.KindLLMText, Text: text}
		want, err := json.Marshal(d)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(appendDeltaJSON(nil, d)), "text %q", text)
	}
	rapid.Check(t, func(t *rapid.T) {
		d := Delta{
			RequestID: rapid.String().Draw(t, "request"),
			Kind:      events.Kind(rapid.String().Draw(t, "kind")),
			Text:      string(rapid.SliceOf(rapid.Byte()).Draw(t, "text")),
			Step:      rapid.IntRange(-1, 1<<40).Draw(t, "step"),
		}
		if rapid.Bool().Draw(t, "valid utf8") {
			d.Text = rapid.String().Draw(t, "text string")
		}
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDeltaJSON(nil, d); string(got) != string(want) {
			t.Fatalf("got %s, want %s", got, want)
		}
		if got := appendDelta(nil, d.RequestID, d.Kind, []byte(d.Text), d.Step); string(got) != string(want) {
			t.Fatalf("from bytes: got %s, want %s", got, want)
		}
	})
}

func BenchmarkDeltaJSON(b *testing.B) {
	d := Delta{RequestID: "01J00000000000000000000001", Kind: events.KindLLMText, Text: "You said: message 3, and <this> too"}
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(d)
		}
	})
	b.Run("by hand", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendDeltaJSON(buf[:0], d)
		}
	})
}
