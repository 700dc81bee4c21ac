package turnlogtest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/turnlogtest"
)

// A test of a program's own chain, as its authors would write it: record
// through a Tx on a real log, then prove with replay what the model saw.
func TestRecordAndVerifyOwnChain(t *testing.T) {
	ctx := context.Background()
	l := turnlogtest.OpenLog(t)
	model := turnlogtest.NewReplies("first answer", "second answer")

	for _, text := range []string{"one", "two"} {
		turn, err := l.Load(ctx, "mine")
		require.NoError(t, err)
		tx := engine.NewTx(turn, engine.NewID(), engine.WithLog(l))
		require.NoError(t, tx.Emit("app", events.UserAppended{BlockID: engine.NewID(), Text: text}))
		require.NoError(t, engine.Loop{Handler: engine.Chain(model)}.Run(ctx, tx))
		require.NoError(t, tx.Emit("app", events.RequestCompleted{Inferences: tx.ModelCalls()}))
		require.NoError(t, tx.Commit(ctx))
	}

	v, err := replay.Verify(ctx, l, "mine")
	require.NoError(t, err)
	assert.True(t, v.OK(), "every recorded model input is proven: %+v", v.Mismatches)
	in := model.Inputs()
	require.Len(t, in, 2)
	assert.Len(t, in[1].Turn.Blocks, 3, "the second call saw the first exchange and the new message")

	_, err = model.Infer(ctx, engine.Input{Turn: in[0].Turn}, nil)
	assert.ErrorContains(t, err, "model call 3, but the test gave 2 replies")
}

// A worker serving a profile, with a scripted model: the default profile
// with the scripted engine, which importing turnlogtest registers.
func TestWorkerWithScript(t *testing.T) {
	srv := turnlogtest.StartServer(t)
	l := srv.StartWorker(t, "profiles:\n  default:\n    middlewares: [ordering]\n", nil)
	res := turnlogtest.Chat(t, l, "c1", "count words in a b c")
	assert.Equal(t, `There are 3 words in "a b c".`, res.Answer)
	assert.Empty(t, res.Failed)

	turn := projector.New("c2")
	require.NoError(t, projector.Apply(turn, events.New("c2", "r", 0, "test", events.UserAppended{BlockID: "u", Text: "ping"})))
	out, err := turnlogtest.Script(t, "rules:\n  - match: ping\n    reply: pong\n").Infer(context.Background(), engine.Input{Turn: turn}, nil)
	require.NoError(t, err)
	assert.Equal(t, "pong", out.Blocks[len(out.Blocks)-1].Text)
}
