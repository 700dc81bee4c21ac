package scripted_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

func turn(blocks ...events.Block) *projector.Turn {
	t := projector.New("c")
	t.Blocks = blocks
	return t
}

func TestDefaultScript(t *testing.T) {
	e := scripted.New(nil)
	ctx := context.Background()

	t.Run("echo with reasoning first", func(t *testing.T) {
		var deltas []string
		out, err := e.Infer(ctx, engine.Input{Turn: turn(events.Block{ID: "u", Kind: events.KindUser, Text: "hello"})},
			func(d engine.Delta) { deltas = append(deltas, d.Text) })
		require.NoError(t, err)
		require.Len(t, out.Blocks, 2)
		assert.Equal(t, events.KindReasoning, out.Blocks[0].Kind)
		assert.Equal(t, "You said: hello", out.Blocks[1].Text)
		assert.NotEmpty(t, deltas, "text streams as deltas")
	})
	t.Run("a tool call, then the answer from its result", func(t *testing.T) {
		user := events.Block{ID: "u", Kind: events.KindUser, Text: "count the words in a b"}
		out, err := e.Infer(ctx, engine.Input{Turn: turn(user)}, nil)
		require.NoError(t, err)
		call := out.Blocks[len(out.Blocks)-1]
		require.Equal(t, events.KindToolCall, call.Kind)
		assert.Equal(t, "word_count", call.ToolName)
		assert.JSONEq(t, `{"text":"a b"}`, call.Arguments)

		result := events.Block{ID: "r", Kind: events.KindToolResult, CallID: call.CallID, Text: "2"}
		out, err = e.Infer(ctx, engine.Input{Turn: turn(user, call, result)}, nil)
		require.NoError(t, err)
		assert.Equal(t, `There are 2 words in "a b".`, out.Blocks[len(out.Blocks)-1].Text)
	})
	t.Run("the rule only matches a message that starts with it", func(t *testing.T) {
		out, err := e.Infer(ctx, engine.Input{Turn: turn(events.Block{ID: "u", Kind: events.KindUser, Text: "summary: user asked to count the words in x"})}, nil)
		require.NoError(t, err)
		for _, b := range out.Blocks {
			assert.NotEqual(t, events.KindToolCall, b.Kind)
		}
	})
}

func TestScriptRules(t *testing.T) {
	s, err := scripted.Parse([]byte(`
rules:
  - match: '^fail'
    fail: 'upstream down'
    transient: true
  - match: '^hi (\w+)'
    reply: 'hello $1'
`))
	require.NoError(t, err)
	e := scripted.New(s)
	_, err = e.Infer(context.Background(), engine.Input{Turn: turn(events.Block{ID: "u", Kind: events.KindUser, Text: "fail now"})}, nil)
	assert.True(t, errors.Is(err, engine.ErrTransient))
	out, err := e.Infer(context.Background(), engine.Input{Turn: turn(events.Block{ID: "u", Kind: events.KindUser, Text: "hi bob"})}, nil)
	require.NoError(t, err)
	assert.Equal(t, "hello bob", out.Blocks[len(out.Blocks)-1].Text)

	_, err = scripted.Parse([]byte("rules:\n  - match: '('\n"))
	assert.ErrorContains(t, err, "rule 1")
	_, err = scripted.Parse([]byte("rules: [\n"))
	assert.Error(t, err)
}

// BenchmarkInfer is the default script's answer to a chat message with
// its deltas: the scripted engine stands in for the model in `turnlog
// bench --workers`, so what it costs is counted against the worker.
func BenchmarkInfer(b *testing.B) {
	e := scripted.New(nil)
	in := engine.Input{Turn: turn(events.Block{ID: "u", Kind: events.KindUser, Text: "message 17"})}
	ctx := context.Background()
	pieces := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Infer(ctx, in, func(engine.Delta) { pieces++ }); err != nil {
			b.Fatal(err)
		}
	}
}

// A summarizing call gets a short summary, however long the transcript:
// echoing it made summaries as long as what they replaced (issue 24).
func TestSummaryIsShort(t *testing.T) {
	transcript := strings.Repeat("[user] "+strings.Repeat("x", 64<<10)+"\n", 100)
	in := engine.Input{Turn: turn(events.Block{ID: "i", Kind: events.KindSystem, Text: "Summarize."},
		events.Block{ID: "t", Kind: events.KindUser, Text: transcript})}
	out, err := scripted.New(nil).Infer(engine.WithPurpose(context.Background(), "compaction"), in, nil)
	require.NoError(t, err)
	require.Len(t, out.Blocks, 1)
	assert.Equal(t, events.KindLLMText, out.Blocks[0].Kind)
	assert.True(t, strings.HasPrefix(out.Blocks[0].Text, "Summary of 100 transcript lines: [user] xxx"), out.Blocks[0].Text[:60])
	assert.Less(t, len(out.Blocks[0].Text), 300)

	// A rule of the script that matches still answers, as written.
	s, err := scripted.Parse([]byte("rules:\n  - match: 'xxx'\n    fail: no summaries today\n"))
	require.NoError(t, err)
	_, err = scripted.New(s).Infer(engine.WithPurpose(context.Background(), "compaction"), in, nil)
	assert.ErrorContains(t, err, "no summaries today")
}
