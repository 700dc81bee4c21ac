package profile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	_ "github.com/turnlog/turnlog/engine/scripted" // provider "scripted", the default profile's
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

func TestBuildWithEngine(t *testing.T) {
	set, err := profile.Load("")
	require.NoError(t, err)
	p := set[profile.DefaultName]

	_, err = p.BuildWithEngine(nil, nil, nil)
	assert.ErrorContains(t, err, "needs an engine")

	calls := 0
	eng := engine.EngineFunc(func(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
		calls++
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "from the given engine"}}}, nil
	})
	b, err := p.BuildWithEngine(eng, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, b.Tools.Specs(), "no tools unless given: a replay must not run real ones")

	tx := engine.NewTx(projector.New("c"), "r1")
	require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: "u", Text: "hi"}))
	require.NoError(t, b.Loop.Run(context.Background(), tx))
	assert.Equal(t, 1, calls)
	last := tx.Turn().Blocks[len(tx.Turn().Blocks)-1]
	assert.Equal(t, "from the given engine", last.Text)
	_, _, hasPrompt := tx.Turn().SystemPrompt()
	assert.True(t, hasPrompt, "the profile's middlewares ran around it")

	bad := p
	bad.Middlewares = []string{"nope"}
	_, err = bad.BuildWithEngine(eng, nil, nil)
	assert.Error(t, err)
}
