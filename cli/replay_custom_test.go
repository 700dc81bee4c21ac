package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// A model call of an engine of one's own that records no wire request
// (no engine.DescribeWire) is the usual case for a team's first engine:
// `replay --inference N --wire` gave as reasons only a failed call, a
// crash or an old turnlog, none of which was true, and did not name what
// the engine must do.
func TestReplayWireOfAnEngineThatRecordsNoneSaysSo(t *testing.T) {
	e := newAuditEnv(t, false)
	ctx := context.Background()
	tx := userSaidHi(t, e, "nowire", "app")
	require.NoError(t, engine.Loop{Handler: engine.Chain(answersHello)}.Run(ctx, tx))
	require.NoError(t, tx.Commit(ctx))

	_, errOut, code := e.run("", "replay", "nowire", "--inference", "1", "--wire")
	assert.NotZero(t, code)
	assert.Contains(t, errOut, "recorded no wire request")
	assert.Contains(t, errOut, "engine.DescribeWire", "names what an engine of one's own must call")
}

// A conversation a custom binary's workers served with its own profiles
// file, re-run without --profiles, is re-run through turnlog's built-in
// profile: the difference it reports (another actor's system prompt)
// read as a change in one's own middleware. The result now says which
// profile ran and what to pass.
func TestRerunWithoutProfilesSaysWhichProfileRan(t *testing.T) {
	t.Setenv("TURNLOG_PROFILES", "")
	e := newAuditEnv(t, false)
	ctx := context.Background()
	tx := userSaidHi(t, e, "own", "worker")
	own := func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if _, _, ok := tx.Turn().SystemPrompt(); !ok {
				if err := tx.Emit("acme.sysprompt", events.SystemPromptSet{BlockID: engine.NewID(), Text: "Be brief.", Trust: events.Trusted}); err != nil {
					return err
				}
			}
			return next(ctx, tx)
		}
	}
	require.NoError(t, engine.Loop{Handler: engine.Chain(answersHello, own)}.Run(ctx, tx))
	require.NoError(t, tx.Emit("worker", events.RequestCompleted{Inferences: tx.ModelCalls()}))
	require.NoError(t, tx.Commit(ctx))

	out, _, code := e.run("", "replay", "--rerun", "own")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "DIFFERENCE")
	assert.Contains(t, out, "no --profiles", "says the built-in profile ran, and what to pass")
}

// userSaidHi opens a Tx on conversation conv in e's log, in which actor
// appended a user's "hi".
func userSaidHi(t *testing.T, e *auditEnv, conv, actor string) *engine.Tx {
	t.Helper()
	turn, err := e.log.Load(context.Background(), conv)
	require.NoError(t, err)
	tx := engine.NewTx(turn, engine.NewID(), engine.WithLog(e.log))
	require.NoError(t, tx.Emit(actor, events.UserAppended{BlockID: engine.NewID(), Text: "hi"}))
	return tx
}

// answersHello is an engine of one's own that answers "hello" and
// records no wire request.
var answersHello = engine.EngineFunc(func(context.Context, engine.Input, func(engine.Delta)) (engine.Output, error) {
	return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "hello"}}}, nil
})
