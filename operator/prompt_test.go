package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/operator"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

func openLog(t *testing.T) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(context.Background(), natstest.Start(t).Conn)
	require.NoError(t, err)
	return l
}

func actor(t *testing.T, name string) string {
	t.Helper()
	a, err := operator.Actor(name)
	require.NoError(t, err)
	return a
}

// importChat records a conversation the way `turnlog import` does.
func importChat(t *testing.T, l *eventlog.Log, conv string, messages string) {
	t.Helper()
	c, err := replay.ParseChat([]byte(`{"id": "` + conv + `", "messages": ` + messages + `}`))
	require.NoError(t, err)
	p, err := replay.PlanImport(conv+".json", c, time.Now())
	require.NoError(t, err)
	_, err = replay.Import(context.Background(), l, []*replay.ImportPlan{p})
	require.NoError(t, err)
}

func prompt(t *testing.T, l *eventlog.Log, conv string) *replay.ActivePrompt {
	t.Helper()
	pt, err := replay.Latest(context.Background(), l, conv)
	require.NoError(t, err)
	return pt.SystemPrompt
}

func TestSetPromptOnANewConversation(t *testing.T) {
	l := openLog(t)
	ctx := context.Background()
	res, err := operator.SetPrompt(ctx, l, "c1", "You are Ada.", actor(t, "ada"), operator.SetOptions{})
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, []events.Type{events.TypeSystemPromptSet}, res.Events)
	assert.Equal(t, 1, res.At)

	p := prompt(t, l, "c1")
	require.NotNil(t, p)
	assert.Equal(t, "You are Ada.", p.Text)
	assert.Equal(t, middlewares.SourceOperator, p.Source)
	assert.Equal(t, events.Trusted, p.Trust, "an operator's text is trusted")
	assert.Equal(t, "operator:ada", p.SetActor, "replay says who set it")
	assert.False(t, p.Locked)

	// The same text again records nothing.
	res, err = operator.SetPrompt(ctx, l, "c1", "You are Ada.", actor(t, "bob"), operator.SetOptions{})
	require.NoError(t, err)
	assert.False(t, res.Changed)
	assert.Empty(t, res.Events)
}

func TestSetPromptReplacesInPlaceAndLocks(t *testing.T) {
	l := openLog(t)
	ctx := context.Background()
	importChat(t, l, "imp", `[{"role": "user", "content": "hi"}, {"role": "system", "content": "You are terse."}, {"role": "assistant", "content": "Hi."}]`)

	res, err := operator.SetPrompt(ctx, l, "imp", "You are verbose.", actor(t, "ada"), operator.SetOptions{Lock: true, Reason: "legal asked"})
	require.NoError(t, err)
	assert.Equal(t, []events.Type{events.TypeSystemPromptReplaced, events.TypeSystemPromptLocked}, res.Events)
	assert.Equal(t, "m1", res.BlockID, "the imported prompt's block")

	turn, err := l.Load(ctx, "imp")
	require.NoError(t, err)
	require.Len(t, turn.Blocks, 3, "replaced in place: no second prompt")
	sp := turn.Blocks[1]
	assert.Equal(t, "You are verbose.", sp.Text)
	assert.Equal(t, map[string]string{events.MetaSystemPromptSource: middlewares.SourceOperator, events.MetaSystemPromptLock: "operator:ada"}, sp.Meta)

	var replaced events.SystemPromptReplaced
	for r, err := range l.Events(ctx, "imp") {
		require.NoError(t, err)
		if p, ok := r.Payload.(events.SystemPromptReplaced); ok {
			replaced = p
			assert.Equal(t, "operator:ada", r.Actor)
		}
	}
	assert.Equal(t, "You are terse.", replaced.Previous)
	assert.Equal(t, middlewares.SourceImport, replaced.PreviousSource, "the event says whose prompt gave way")
	assert.Equal(t, "legal asked", replaced.Reason)

	// Locked: another set is refused, and says what to do.
	_, err = operator.SetPrompt(ctx, l, "imp", "Something else.", actor(t, "bob"), operator.SetOptions{})
	assert.ErrorIs(t, err, operator.ErrLocked)
	assert.ErrorContains(t, err, "turnlog prompt unlock imp")
}

func TestLockAndUnlock(t *testing.T) {
	l := openLog(t)
	ctx := context.Background()
	_, err := operator.LockPrompt(ctx, l, "none", actor(t, "ada"), "")
	assert.ErrorIs(t, err, operator.ErrNoPrompt)
	assert.ErrorContains(t, err, "turnlog prompt set --text TEXT none")

	_, err = operator.SetPrompt(ctx, l, "c", "Be brief.", actor(t, "ada"), operator.SetOptions{})
	require.NoError(t, err)
	res, err := operator.LockPrompt(ctx, l, "c", actor(t, "ada"), "freeze for the audit")
	require.NoError(t, err)
	assert.Equal(t, []events.Type{events.TypeSystemPromptLocked}, res.Events)
	p := prompt(t, l, "c")
	assert.True(t, p.Locked)
	assert.Equal(t, "operator:ada", p.LockedBy)
	assert.Equal(t, 2, p.LockedAt)

	res, err = operator.LockPrompt(ctx, l, "c", actor(t, "bob"), "")
	require.NoError(t, err)
	assert.False(t, res.Changed, "locked already")
	assert.Equal(t, "already locked by operator:ada", res.Note)

	res, err = operator.UnlockPrompt(ctx, l, "c", actor(t, "bob"), "audit done")
	require.NoError(t, err)
	assert.Equal(t, []events.Type{events.TypeSystemPromptUnlocked}, res.Events)
	assert.False(t, prompt(t, l, "c").Locked)
	res, err = operator.UnlockPrompt(ctx, l, "c", actor(t, "bob"), "")
	require.NoError(t, err)
	assert.False(t, res.Changed)

	// Replay shows who did what, in order.
	h, err := replay.Timeline(ctx, l, "c")
	require.NoError(t, err)
	var got []string
	for _, e := range h.Events {
		got = append(got, string(e.Type)+" by "+e.Actor)
	}
	assert.Equal(t, []string{"systemprompt.set by operator:ada", "systemprompt.locked by operator:ada", "systemprompt.unlocked by operator:bob"}, got)
	assert.Contains(t, h.Events[1].Summary, `locked by operator:ada: "freeze for the audit"`)
}

func TestBadInput(t *testing.T) {
	l := openLog(t)
	ctx := context.Background()
	for _, name := range []string{"", "a b", "x\x1b[31m", strings.Repeat("n", 65)} {
		_, err := operator.Actor(name)
		assert.ErrorIs(t, err, operator.ErrInvalid, "%q", name)
	}
	_, err := operator.SetPrompt(ctx, l, "c", " \n", actor(t, "ada"), operator.SetOptions{})
	assert.ErrorIs(t, err, operator.ErrInvalid)
	_, err = operator.SetPrompt(ctx, l, "c", strings.Repeat("x", operator.MaxPromptBytes+1), actor(t, "ada"), operator.SetOptions{})
	assert.ErrorIs(t, err, operator.ErrInvalid)
	_, err = operator.SetPrompt(ctx, l, "a.b", "x", actor(t, "ada"), operator.SetOptions{})
	assert.ErrorIs(t, err, operator.ErrInvalid)
	_, err = operator.SetPrompt(ctx, l, "c", "x", "ada", operator.SetOptions{})
	assert.ErrorIs(t, err, operator.ErrInvalid, "an actor that is not an operator's")
	_, err = replay.Latest(ctx, l, "c")
	assert.ErrorIs(t, err, replay.ErrNoEvents, "nothing was recorded")
}

// racingStore appends a user message (as a worker would) right before the
// operator's first append, so that append meets a conversation that moved.
type racingStore struct {
	*eventlog.Log
	raced bool
}

func (s *racingStore) Append(ctx context.Context, conv string, expected uint64, evs ...events.Event) (uint64, error) {
	if !s.raced {
		s.raced = true
		e := events.New(conv, "req-race", 0, "worker", events.UserAppended{BlockID: "u-race", Text: "meanwhile"})
		if _, err := s.Log.Append(ctx, conv, expected, e); err != nil {
			return 0, err
		}
	}
	return s.Log.Append(ctx, conv, expected, evs...)
}

func TestActionRetriesOnTheNewTurn(t *testing.T) {
	l := openLog(t)
	ctx := context.Background()
	_, err := operator.SetPrompt(ctx, l, "c", "Be brief.", actor(t, "ada"), operator.SetOptions{})
	require.NoError(t, err)
	res, err := operator.LockPrompt(ctx, &racingStore{Log: l}, "c", actor(t, "ada"), "")
	require.NoError(t, err)
	assert.True(t, res.Changed)
	turn, err := l.Load(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"Be brief.", "meanwhile"}, texts(turn), "the worker's message is kept")
	assert.Equal(t, "operator:ada", turn.Blocks[0].Meta[events.MetaSystemPromptLock])
}

func texts(t *projector.Turn) []string {
	var out []string
	for _, b := range t.Blocks {
		out = append(out, b.Text)
	}
	return out
}
