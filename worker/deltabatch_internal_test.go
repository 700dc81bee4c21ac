package worker

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// published collects what a deltaBatch publishes.
type published struct {
	mu     sync.Mutex
	deltas []Delta
}

func (p *published) publish(data []byte) {
	var d Delta
	if err := json.Unmarshal(data, &d); err != nil {
		panic(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deltas = append(p.deltas, d)
}

func (p *published) get() []Delta {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Delta(nil), p.deltas...)
}

func TestDeltaBatch(t *testing.T) {
	reasoning, text := events.KindReasoning, events.KindLLMText
	pieces := func(kind events.Kind, words ...string) []engine.Delta {
		var ds []engine.Delta
		for _, w := range words {
			ds = append(ds, engine.Delta{Kind: kind, Text: w})
		}
		return ds
	}
	cases := []struct {
		name string
		in   []engine.Delta
		want []Delta
	}{
		{
			name: "a burst goes out as one delta per kind",
			in:   append(pieces(reasoning, "Nothing ", "to ", "do."), pieces(text, "You ", "said: ", "hi")...),
			want: []Delta{
				{RequestID: "r", Kind: reasoning, Text: "Nothing to do."},
				{RequestID: "r", Kind: text, Text: "You said: hi"},
			},
		},
		{
			name: "kinds that alternate are never merged",
			in:   []engine.Delta{{Kind: text, Text: "a"}, {Kind: reasoning, Text: "b"}, {Kind: text, Text: "c"}, {Kind: text, Text: "d"}},
			want: []Delta{{RequestID: "r", Kind: text, Text: "a"}, {RequestID: "r", Kind: reasoning, Text: "b"}, {RequestID: "r", Kind: text, Text: "cd"}},
		},
		{
			name: "empty pieces publish nothing",
			in:   []engine.Delta{{Kind: text, Text: ""}},
		},
		{
			name: "text past the size bound goes out at once",
			in:   []engine.Delta{{Kind: text, Text: "a"}, {Kind: text, Text: strings.Repeat("x", maxDeltaBytes)}, {Kind: text, Text: "b"}},
			want: []Delta{{RequestID: "r", Kind: text, Text: "a" + strings.Repeat("x", maxDeltaBytes)}, {RequestID: "r", Kind: text, Text: "b"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out published
			b := newDeltaBatch("r", out.publish)
			b.window, b.lead = time.Hour, time.Hour // no timer fires during the test
			for _, d := range tc.in {
				b.add(d)
			}
			b.flush()
			b.flush() // nothing left: nothing more
			assert.Equal(t, tc.want, out.get())
		})
	}
}

// TestDeltaBatchWaitsAtMostTheWindow: text that waits goes out when the
// window ends, without a flush (a model that pauses mid-answer).
func TestDeltaBatchWaitsAtMostTheWindow(t *testing.T) {
	var out published
	b := newDeltaBatch("r", out.publish)
	b.window = 5 * time.Millisecond
	b.add(engine.Delta{Kind: events.KindLLMText, Text: "first "})
	b.add(engine.Delta{Kind: events.KindLLMText, Text: "second"})
	require.Eventually(t, func() bool {
		var all strings.Builder
		for _, d := range out.get() {
			all.WriteString(d.Text)
		}
		return all.String() == "first second"
	}, 10*time.Second, time.Millisecond, "the waiting text is published by the window's timer")
}

// TestDeltaBatchLeadsAfterAQuietSpell: the first piece after a quiet
// spell does not wait for the window; it goes out after the short lead,
// with what came right behind it, and the next piece waits for the rest
// of the window.
func TestDeltaBatchLeadsAfterAQuietSpell(t *testing.T) {
	var out published
	b := newDeltaBatch("r", out.publish)
	b.window, b.lead = time.Hour, 100*time.Millisecond // long enough for both adds, even under -race
	b.add(engine.Delta{Kind: events.KindLLMText, Text: "first "})
	b.add(engine.Delta{Kind: events.KindLLMText, Text: "second "})
	require.Eventually(t, func() bool { return len(out.get()) == 1 }, 10*time.Second, time.Millisecond,
		"the lead's timer publishes the first pieces without a flush")
	assert.Equal(t, "first second ", out.get()[0].Text)
	b.add(engine.Delta{Kind: events.KindLLMText, Text: "third"})
	time.Sleep(300 * time.Millisecond) // three leads: a lead would have fired, the window has not
	assert.Len(t, out.get(), 1, "a piece inside the window waits for its end (or a flush)")
	b.flush()
	assert.Equal(t, "third", out.get()[1].Text)
}
