package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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

// TestChainRecordsTheWire: every model call of a request closes with the
// hash of the request its engine sent, rendered again from the log to the
// same bytes; a call that failed before sending records none.
func TestChainRecordsTheWire(t *testing.T) {
	l, err := eventlog.Open(context.Background(), natstest.Start(t).Conn)
	require.NoError(t, err)
	chat(t, l, "c", "r1", "count the words in one two three")

	var (
		turn    = projector.New("c")
		inputs  = map[string]*projector.Turn{}
		closing []events.InferenceFinished
	)
	for r, err := range l.Events(context.Background(), "c") {
		require.NoError(t, err)
		switch p := r.Payload.(type) {
		case events.InferenceStarted:
			inputs[p.InferenceID] = turn.Clone()
		case events.InferenceFinished:
			closing = append(closing, p)
		}
		require.NoError(t, projector.Apply(turn, r.Event))
	}
	require.Len(t, closing, 2, "the tool call, then the answer")
	for _, f := range closing {
		require.Equal(t, scripted.WireVersion, f.Version)
		body, err := scripted.RenderWire([]byte(f.Params), inputs[f.InferenceID])
		require.NoError(t, err)
		sum := sha256.Sum256(body)
		assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256)
		assert.Contains(t, string(body), `"name":"word_count"`, "the tools offered are part of it")
	}

	// A call whose engine fails before sending anything records no wire.
	tx := engine.NewTx(projector.New("d"), "r2")
	require.NoError(t, tx.Emit("worker", events.UserAppended{BlockID: engine.NewID(), Text: "hi"}))
	failing := engine.EngineFunc(func(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
		return engine.Output{}, errors.New("cannot render")
	})
	require.Error(t, engine.Chain(failing)(context.Background(), tx))
	evs := tx.Committed()
	failed, ok := evs[len(evs)-1].Payload.(events.InferenceFailed)
	require.True(t, ok)
	assert.True(t, failed.Wire.IsZero(), "nothing was sent, nothing is recorded: %+v", failed.Wire)
}
