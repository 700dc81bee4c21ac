package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

func TestInferAsideRefusesWhatItCannotRecord(t *testing.T) {
	eng := engine.EngineFunc(func(context.Context, engine.Input, func(engine.Delta)) (engine.Output, error) {
		t.Fatal("the model must not be asked")
		return engine.Output{}, nil
	})
	tx := engine.NewTx(projector.New("c"), "r")
	_, err := engine.InferAside(context.Background(), tx, eng, engine.Aside{Input: engine.Input{Turn: tx.Turn()}, Purpose: "compaction"})
	assert.ErrorContains(t, err, "input Turn of its own")
	_, err = engine.InferAside(context.Background(), tx, eng, engine.Aside{Input: engine.Input{Turn: projector.New("x")}})
	assert.ErrorContains(t, err, "needs a purpose")
	assert.Empty(t, tx.Committed())
	assert.Empty(t, tx.Pending())
}

func TestInferAsideRecordsTheCall(t *testing.T) {
	var purpose string
	eng := engine.EngineFunc(func(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
		purpose = engine.PurposeFrom(ctx)
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "sum"}}, Usage: engine.Usage{PromptTokens: 7, CompletionTokens: 2}, StopReason: "stop"}, nil
	})
	turn := projector.New("c")
	tx := engine.NewTx(turn, "r")
	require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: "u", Text: "hi"}))
	in := projector.New("aside")
	in.Blocks = []events.Block{{ID: "i", Kind: events.KindSystem, Text: "Summarize.", Trust: events.Trusted}, {ID: "t", Kind: events.KindUser, Text: "[user] hi"}}
	out, err := engine.InferAside(context.Background(), tx, eng, engine.Aside{Input: engine.Input{Turn: in, Model: "m"}, Purpose: "compaction",
		Instructions: "Summarize.", InputBlocks: []string{"u"}})
	require.NoError(t, err)
	assert.Equal(t, "sum", out.Blocks[0].Text)
	assert.Equal(t, "compaction", purpose)
	require.Equal(t, []events.Type{events.TypeUserAppended, events.TypeInferenceStarted}, typesOf(tx.Committed()), "committed with what was pending, before the call")
	started := tx.Committed()[1].Payload.(events.InferenceStarted)
	assert.Equal(t, projector.Hash(in), started.InputHash)
	assert.Equal(t, "i", started.SystemPromptID)
	assert.Equal(t, 2, started.Blocks)
	assert.Equal(t, []string{"u"}, started.InputBlocks)
	require.Len(t, tx.Pending(), 1)
	finished := tx.Pending()[0].Payload.(events.InferenceFinished)
	assert.Equal(t, started.InferenceID, finished.InferenceID)
	assert.Equal(t, 7, finished.PromptTokens)
	assert.Len(t, tx.Turn().Blocks, 1, "the output is the caller's to use")
}

func typesOf(evs []events.Event) []events.Type {
	var out []events.Type
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}
