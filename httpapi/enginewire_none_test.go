package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// TestCallWireOfAnEngineThatRecordsNone: an engine of a program's own
// that does not record its request (no engine.DescribeWire) made a call
// that succeeded; the wire route says so and how to record it, as
// `replay --inference N --wire` does, instead of blaming a failure or an
// old turnlog.
func TestCallWireOfAnEngineThatRecordsNone(t *testing.T) {
	ctx := context.Background()
	ts, l := startChatAPI(t)
	const conv = "wire-none"
	eng := engine.EngineFunc(func(context.Context, engine.Input, func(engine.Delta)) (engine.Output, error) {
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "hi"}}, StopReason: "stop"}, nil
	})
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	tx := engine.NewTx(turn, engine.NewID(), engine.WithLog(l))
	require.NoError(t, tx.Emit("app", events.UserAppended{BlockID: engine.NewID(), Text: "hello"}))
	require.NoError(t, engine.Loop{Handler: engine.Chain(eng)}.Run(ctx, tx))
	require.NoError(t, tx.Emit("app", events.RequestCompleted{Inferences: tx.ModelCalls()}))
	require.NoError(t, tx.Commit(ctx))

	status, body, _ := call(t, ts, "GET", "/conversations/"+conv+"/calls/1/wire", "Bearer "+token, "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body["error"], "its engine records none")
	assert.Contains(t, body["error"], "engine.DescribeWire")
}
