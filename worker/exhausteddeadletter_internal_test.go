package worker

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
)

// TestExhaustedDeadLetterNamesTheChatSubject: a request JetStream gave up
// on (MaxDeliver) whose conversation is an app's was dead-lettered under
// the requests stream's stored subject (<prefix>.chat.<partition>.<conv>),
// not the chat subject it was published on, which the HTTP API's stream
// ("dead_letter") and chatclient.Ask match: neither told its sender.
func TestExhaustedDeadLetterNamesTheChatSubject(t *testing.T) {
	w, l, ctx := idleWorker(t)
	const conv = "app-exhausted"
	_, err := l.Append(ctx, conv, 0, events.New(conv, "call-app", 0, calls.Actor, events.UserAppended{BlockID: "u-app", Text: "from the app"}))
	require.NoError(t, err)
	req, err := Send(ctx, l, Request{Conversation: conv, Text: "hello"})
	require.NoError(t, err)
	require.NoError(t, w.endExhausted(ctx, 1, 5))
	dead, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, req.RequestID, dead[0].RequestID())
	assert.Equal(t, l.Names().ChatSubject(conv), dead[0].Subject, "the subject the stream's dead_letter and Ask match on")
}

// TestExhaustedTakenOverRequestEndsFailed: a request JetStream gave up on
// that had stored a step before an app's call landed was dead-lettered
// ("request.failed could not be stored: ... taken over"), its model call
// left open in the app's record. It ends there as request.failed with
// taken_over, its model call closed, as one a worker finds so ends.
func TestExhaustedTakenOverRequestEndsFailed(t *testing.T) {
	w, l, ctx := idleWorker(t)
	const conv = "taken-exhausted"
	req, err := Send(ctx, l, Request{Conversation: conv, Text: "hello"})
	require.NoError(t, err)
	seq, err := l.Append(ctx, conv, 0,
		events.New(conv, req.RequestID, 0, ActorWorker, events.UserAppended{BlockID: "u1", Text: "hello"}),
		events.New(conv, req.RequestID, 0, ActorWorker, events.InferenceStarted{InferenceID: "inf-1", Model: "m", InputHash: "sha256:00"}))
	require.NoError(t, err)
	_, err = l.Append(ctx, conv, seq, events.New(conv, "call-app", 0, calls.Actor, events.UserAppended{BlockID: "u-app", Text: "from the app"}))
	require.NoError(t, err)

	require.NoError(t, w.endExhausted(ctx, 1, 5))
	dead, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, dead, "not a dead letter: it had steps")
	last, err := l.Last(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, req.RequestID, last.Cause)
	var failed *events.RequestFailed
	closed := false
	for _, e := range last.Events {
		switch p := e.Payload.(type) {
		case events.RequestFailed:
			failed = &p
		case events.InferenceFailed:
			closed = p.InferenceID == "inf-1"
			assert.Zero(t, p.Duration, "its latency unknown: the time until now is the outage's, not the call's")
		}
	}
	require.NotNil(t, failed, "the request ends failed")
	assert.True(t, failed.TakenOver, "taken over: the conversation stays the app's")
	assert.True(t, closed, "its model call is closed")
	assert.ErrorIs(t, NotAnApps(conv, last), ErrAppsConversation)
}

// idleWorker is a worker on a fresh server that runs nothing by itself (a
// test calls its methods), its log, and a context of 30 s.
func idleWorker(t *testing.T) (*Worker, *eventlog.Log, context.Context) {
	t.Helper()
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := New(Config{Log: l, Conn: srv.Conn, Profiles: profiles, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	return w, l, ctx
}
