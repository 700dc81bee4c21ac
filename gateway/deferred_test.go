package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// A deferred call (the gateway's live calls) is read and recorded only
// once it is started, by Start or by anything that needs it; one that is
// finished without ever being started is recorded all the same.
func TestDeferredCallsRecordOnceStarted(t *testing.T) {
	s := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	rec, err := gateway.NewRecorder(gateway.Config{Log: l, Connected: s.Conn.IsConnected, Token: token, OpenAIUpstream: "http://127.0.0.1:1/v1"})
	require.NoError(t, err)
	ctx := context.Background()
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	answer := []byte(`{"id":"c1","model":"m","choices":[{"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`)
	outcome := func() calls.Outcome {
		out, err := calls.ParseResponse(calls.ChatCompletions, answer)
		require.NoError(t, err)
		return calls.Outcome{Output: out}
	}
	stored := func(conv string) int {
		n := 0
		for _, err := range l.Events(ctx, conv) {
			require.NoError(t, err)
			n++
		}
		return n
	}

	p, err := rec.Begin(ctx, gateway.Call{API: calls.ChatCompletions, Body: body, Conversation: "deferred-1", Deferred: true})
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	assert.Zero(t, stored("deferred-1"), "nothing is recorded before the call is started")
	p.Start()
	p.Start() // twice is harmless
	require.NoError(t, rec.Finish(ctx, p, outcome()))
	finished := false
	for _, e := range conversationEvents(t, l, "deferred-1") {
		_, ok := e.Payload.(events.InferenceFinished)
		finished = finished || ok
	}
	assert.True(t, finished, "the call's outcome is recorded")

	// Never started: Finish starts it.
	p, err = rec.Begin(ctx, gateway.Call{API: calls.ChatCompletions, Body: body, Conversation: "deferred-2", Deferred: true})
	require.NoError(t, err)
	require.NoError(t, rec.Finish(ctx, p, outcome()))
	assert.NotZero(t, stored("deferred-2"))

	// Asking for the conversation starts it too.
	p, err = rec.Begin(ctx, gateway.Call{API: calls.ChatCompletions, Body: body, Deferred: true})
	require.NoError(t, err)
	conv := p.Conversation()
	require.NoError(t, rec.Finish(ctx, p, outcome()))
	assert.NotZero(t, stored(conv))
}
