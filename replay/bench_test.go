package replay_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
)

const benchScript = `
rules:
  - match: '^count the words in (.+)'
    reasoning: 'The user wants a word count.'
    tool_calls:
      - name: word_count
        arguments: '{"text": $1json}'
    after_tools: 'There are {{result}} words.'
default:
  reasoning: 'Nothing to look up.'
  reply: 'You said: $0'
`

// longConversation writes a conversation of at least n events through
// the profile's chain, as workers would: every fifth request calls the
// word_count tool. It returns the log and the number of events.
func longConversation(b *testing.B, p profile.Profile, conv string, n int) (*eventlog.Log, int) {
	b.Helper()
	l := openTestLog(b)
	// The default script's tool rule is anchored here: unanchored, it
	// also matches the transcript the compaction summarizer sends, which
	// then gets a tool call instead of a summary.
	p.Script = filepath.Join(b.TempDir(), "script.yaml")
	require.NoError(b, os.WriteFile(p.Script, []byte(benchScript), 0o600))
	built, err := p.Build(slog.New(slog.DiscardHandler), nil)
	require.NoError(b, err)
	c := newConvo(b, l, conv)
	for i := 0; c.turn.Events < n; i++ {
		text := fmt.Sprintf("message %d: tell me about item %d", i, i)
		if i%5 == 4 {
			text = fmt.Sprintf("count the words in item %d is here", i)
		}
		c.request(built.Loop, text, nil)
	}
	return l, c.turn.Events
}

func benchmarkVerify(b *testing.B, p profile.Profile, opts ...eventlog.Option) {
	ctx := context.Background()
	l, n := longConversation(b, p, "long", 10_000)
	if len(opts) > 0 {
		var err error
		l, err = eventlog.Open(ctx, l.JetStream().Conn(), opts...)
		require.NoError(b, err)
	}
	v, err := replay.Verify(ctx, l, "long")
	require.NoError(b, err)
	require.True(b, v.OK())
	for b.Loop() {
		if _, err := replay.Verify(ctx, l, "long"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "events")
	b.ReportMetric(float64(v.Inferences), "inferences")
}

// BenchmarkVerify10k is `replay --verify` of a 10,000-event conversation
// written by the default profile (compaction keeps the Turn under 200
// blocks): reading the log, one fold, one hash per model call.
func BenchmarkVerify10k(b *testing.B) {
	set, err := profile.Load("")
	require.NoError(b, err)
	benchmarkVerify(b, set[profile.DefaultName])
}

// BenchmarkVerify10kFromStream is BenchmarkVerify10k as `replay --verify`
// reads: from the events stream only, never the history cache, which the
// workers write (eventlog.FromStreamOnly).
func BenchmarkVerify10kFromStream(b *testing.B) {
	set, err := profile.Load("")
	require.NoError(b, err)
	benchmarkVerify(b, set[profile.DefaultName], eventlog.ReadOnly(), eventlog.FromStreamOnly())
}

// BenchmarkVerify10kUncompacted is the same without compaction: the Turn
// grows to thousands of blocks, and each model call's hash covers all of
// them.
func BenchmarkVerify10kUncompacted(b *testing.B) {
	set, err := profile.Load("")
	require.NoError(b, err)
	p := set[profile.DefaultName]
	p.Middlewares = slices.DeleteFunc(slices.Clone(p.Middlewares), func(m string) bool { return m == "compaction" })
	benchmarkVerify(b, p)
}

// BenchmarkTimeline10k is `replay` of the same conversation with every
// model call's Turn.
func BenchmarkTimeline10k(b *testing.B) {
	ctx := context.Background()
	set, err := profile.Load("")
	require.NoError(b, err)
	l, _ := longConversation(b, set[profile.DefaultName], "long", 10_000)
	for b.Loop() {
		if _, err := replay.Timeline(ctx, l, "long"); err != nil {
			b.Fatal(err)
		}
	}
}
