package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestFailedCallKeepsWhatItStreamed: a model call that streamed reasoning
// and text and then failed (the provider's stream cut, an error event)
// recorded only inference.failed; what the user had seen printed was in
// no record. It is kept as the failed call's partial output, in order,
// and not added to the Turn (the request has no answer to continue from).
func TestFailedCallKeepsWhatItStreamed(t *testing.T) {
	l, err := eventlog.Open(context.Background(), natstest.Start(t).Conn)
	require.NoError(t, err)
	cut := engine.EngineFunc(func(_ context.Context, _ engine.Input, delta func(engine.Delta)) (engine.Output, error) {
		delta(engine.Delta{Kind: events.KindReasoning, Text: "The user greets; "})
		delta(engine.Delta{Kind: events.KindReasoning, Text: "greet back."})
		delta(engine.Delta{Kind: events.KindLLMText, Text: "Hel"})
		delta(engine.Delta{Kind: events.KindLLMText, Text: "lo the"})
		return engine.Output{}, engine.Transient(errors.New("stream cut: unexpected EOF"))
	})
	err, evs := runLoop(t, l, "cut", engine.Chain(cut))
	require.Error(t, err)
	failed, ok := evs[len(evs)-1].Payload.(events.InferenceFailed)
	require.True(t, ok, "%T", evs[len(evs)-1].Payload)
	require.Len(t, failed.Partial, 2, "what the call streamed before it failed")
	assert.Equal(t, events.KindReasoning, failed.Partial[0].Kind)
	assert.Equal(t, "The user greets; greet back.", failed.Partial[0].Text)
	assert.Equal(t, events.KindLLMText, failed.Partial[1].Kind)
	assert.Equal(t, "Hello the", failed.Partial[1].Text)
	assert.NotEqual(t, failed.Partial[0].ID, failed.Partial[1].ID)
	turn, err := l.Load(context.Background(), "cut")
	require.NoError(t, err)
	for _, b := range turn.Blocks {
		assert.NotEqual(t, events.KindLLMText, b.Kind, "the partial answer is not in the Turn")
		assert.NotEqual(t, events.KindReasoning, b.Kind)
	}

	// More than a step can hold is left out, saying so; the call is
	// recorded as failed all the same.
	huge := engine.EngineFunc(func(_ context.Context, _ engine.Input, delta func(engine.Delta)) (engine.Output, error) {
		chunk := strings.Repeat("x", 64<<10)
		for range 8 {
			delta(engine.Delta{Kind: events.KindLLMText, Text: chunk})
		}
		return engine.Output{}, errors.New("stream cut")
	})
	err, evs = runLoop(t, l, "huge", engine.Chain(huge))
	require.Error(t, err)
	failed, ok = evs[len(evs)-1].Payload.(events.InferenceFailed)
	require.True(t, ok, "%T", evs[len(evs)-1].Payload)
	assert.Nil(t, failed.Partial)
	assert.Contains(t, failed.Error, "stream cut")
	assert.Contains(t, failed.Error, "what the call streamed before it failed")
}
