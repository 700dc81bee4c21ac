package cli

import (
	"context"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestRepairClosesACallItsGatewayLeftOpen: a gateway killed during a
// conversation's first call leaves that call open, and the app's retry
// starts a conversation of its own (a call with no answer is no state to
// continue), so no later call of the conversation ever closes it as
// abandoned: ls showed it open for ever, and `turnlog repair` said
// "nothing to repair" (found by an adopter probe). repair now closes a
// gateway call left open whose gateway no longer runs, with an
// inference.failed saying so, by actor repair; one whose gateway still
// runs is left alone.
func TestRepairClosesACallItsGatewayLeftOpen(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, false)
	gone, running := ulid.Make().String(), ulid.Make().String()
	appendStep(t, e, "crashed", events.UserAppended{BlockID: "u1", Text: "hello"},
		events.InferenceStarted{InferenceID: "inf-1", Model: "m", Blocks: 1, InputHash: "v2:0000", Gateway: map[string]string{"api": "chat.completions", "instance": gone}})
	stop, err := e.log.AnswerAlive(running)
	require.NoError(t, err)
	defer stop()
	appendStep(t, e, "inflight", events.UserAppended{BlockID: "u1", Text: "hello"},
		events.InferenceStarted{InferenceID: "inf-2", Model: "m", Blocks: 1, InputHash: "v2:0000", Gateway: map[string]string{"api": "chat.completions", "instance": running}})

	out, errOut, code := e.run("", "repair", "crashed")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `close model call "inf-1" as failed`)
	assert.Contains(t, out, gone)
	assert.Contains(t, out, "nothing changed")

	out, errOut, code = e.run("", "repair", "crashed", "--yes")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "closed 1 model call left open")
	last, err := e.log.Last(ctx, "crashed")
	require.NoError(t, err)
	require.Len(t, last.Events, 1)
	f, ok := last.Events[0].Payload.(events.InferenceFailed)
	require.True(t, ok, "%T", last.Events[0].Payload)
	assert.Equal(t, "inf-1", f.InferenceID)
	assert.Contains(t, f.Error, gone)
	assert.Equal(t, "repair", last.Events[0].Actor)
	out, _, _ = e.run("", "repair", "crashed")
	assert.Contains(t, out, "nothing to repair", "closed once")

	out, errOut, code = e.run("", "repair", "inflight")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "nothing to repair", "a call whose gateway runs is in progress")
}
