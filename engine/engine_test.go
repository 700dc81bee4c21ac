package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/projector"
)

// chat runs one request the way a worker does: the user block as step 0,
// then the loop, each step appended to the log.
func chat(t *testing.T, l *eventlog.Log, conv, cause, text string) *engine.Tx {
	t.Helper()
	ctx := context.Background()
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	tools, err := engine.NewTools(scripted.WordCount())
	require.NoError(t, err)
	tx := engine.NewTx(turn, cause, engine.WithLog(l), engine.WithTools(tools.Specs()...))
	require.NoError(t, tx.Emit("worker", events.UserAppended{BlockID: engine.NewID(), Text: text}))
	require.NoError(t, tx.Commit(ctx))
	loop := engine.Loop{Handler: engine.Chain(scripted.New(nil)), Tools: tools}
	require.NoError(t, loop.Run(ctx, tx))
	return tx
}

func TestToolLoopThroughTheLog(t *testing.T) {
	l, err := eventlog.Open(context.Background(), natstest.Start(t).Conn)
	require.NoError(t, err)

	chat(t, l, "c", "r1", "count the words in one two three")
	turn, err := l.Load(context.Background(), "c")
	require.NoError(t, err)

	var kinds []events.Kind
	for _, b := range turn.Blocks {
		kinds = append(kinds, b.Kind)
	}
	assert.Equal(t, []events.Kind{events.KindUser, events.KindReasoning, events.KindToolCall, events.KindToolResult, events.KindLLMText}, kinds)
	assert.Equal(t, "3", turn.Blocks[3].Text)
	assert.Equal(t, `There are 3 words in "one two three".`, turn.Blocks[4].Text)
	assert.Equal(t, engine.Done, engine.NextStep(turn).Action)
}

// TestEveryInferenceInputIsProvable re-projects the log up to each
// inference.started and checks the recorded hash: the log alone proves what
// every model call received.
func TestEveryInferenceInputIsProvable(t *testing.T) {
	ctx := context.Background()
	l, err := eventlog.Open(ctx, natstest.Start(t).Conn)
	require.NoError(t, err)
	chat(t, l, "c", "r1", "hello")
	chat(t, l, "c", "r2", "count words in a b")
	chat(t, l, "c", "r3", "bye")

	turn := projector.New("c")
	inferences := 0
	for rec, err := range l.Events(ctx, "c") {
		require.NoError(t, err)
		if started, ok := rec.Payload.(events.InferenceStarted); ok {
			inferences++
			assert.Equal(t, started.InputHash, projector.Hash(turn), "inference at event %d", rec.Pos)
		}
		require.NoError(t, projector.Apply(turn, rec.Event))
	}
	assert.Equal(t, 4, inferences, "hello, the tool call, its answer, bye")
}

// TestToolCallFollowedByTextIsRun: a model that answers with a tool call
// and then text ("let me count") had its call never run: the loop took
// the answer for the last one, the request completed, and its next call
// sent a tool call without its result, which providers refuse.
func TestToolCallFollowedByTextIsRun(t *testing.T) {
	l, err := eventlog.Open(context.Background(), natstest.Start(t).Conn)
	require.NoError(t, err)
	tools, err := engine.NewTools(scripted.WordCount())
	require.NoError(t, err)
	calls := 0
	eng := engine.EngineFunc(func(_ context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
		calls++
		if calls == 1 {
			return engine.Output{Blocks: []events.Block{
				{Kind: events.KindToolCall, CallID: "c1", ToolName: "word_count", Arguments: `{"text":"one two"}`},
				{Kind: events.KindLLMText, Text: "Let me count."}}}, nil
		}
		last := in.Turn.Blocks[len(in.Turn.Blocks)-1]
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "There are " + last.Text + " words."}}}, nil
	})
	ctx := context.Background()
	turn, err := l.Load(ctx, "c")
	require.NoError(t, err)
	tx := engine.NewTx(turn, "r1", engine.WithLog(l), engine.WithTools(tools.Specs()...))
	require.NoError(t, tx.Emit("worker", events.UserAppended{BlockID: engine.NewID(), Text: "count one two"}))
	require.NoError(t, engine.Loop{Handler: engine.Chain(eng), Tools: tools}.Run(ctx, tx))
	turn, err = l.Load(ctx, "c")
	require.NoError(t, err)
	var texts []string
	for _, b := range turn.Blocks {
		texts = append(texts, string(b.Kind)+":"+b.Text)
	}
	assert.Equal(t, []string{"user:count one two", "tool_call:", "llm_text:Let me count.", "tool_result:2", "llm_text:There are 2 words."}, texts)
	assert.Equal(t, engine.Done, engine.NextStep(turn).Action)
}

// TestResumedRequestKeepsItsLimit: a request resumed after a crash had its
// MaxIterations count start again, so a request resumed often could call
// the model without end. Loop.Made counts the calls answered before.
func TestResumedRequestKeepsItsLimit(t *testing.T) {
	calls := 0
	eng := engine.EngineFunc(func(context.Context, engine.Input, func(engine.Delta)) (engine.Output, error) {
		calls++
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "hi"}}}, nil
	})
	tx := engine.NewTx(projector.New("c"), "r1")
	require.NoError(t, tx.Emit("worker", events.UserAppended{BlockID: engine.NewID(), Text: "hello"}))
	err := engine.Loop{Handler: engine.Chain(eng), MaxIterations: 3, Made: 3}.Run(context.Background(), tx)
	require.ErrorIs(t, err, engine.ErrTooManyIterations)
	assert.Zero(t, calls, "the limit was reached before the crash")
	require.NoError(t, engine.Loop{Handler: engine.Chain(eng), MaxIterations: 3, Made: 2}.Run(context.Background(), tx))
	assert.Equal(t, 1, calls)
}
