package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// appFailsLog is the log the test.appfails engine appends the app's call to.
var appFailsLog atomic.Pointer[eventlog.Log]

// appFailsCalled: the app's call lands once, in the first model call.
var appFailsCalled atomic.Bool

// test.appfails: while the model call runs (inference.started is
// stored), the app's call lands in the conversation through the gateway;
// then the model answers with a permanent error (a 400, say).
func init() {
	profile.RegisterEngine("test.appfails", func(s profile.EngineSpec) (engine.Engine, error) {
		if s.CheckOnly {
			return nil, nil
		}
		return engine.EngineFunc(func(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
			l := appFailsLog.Load()
			conv := in.Turn.Conversation
			if appFailsCalled.Swap(true) {
				return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "the worker's answer"}}}, nil
			}
			last, err := l.LastSeq(ctx, conv)
			if err == nil {
				_, err = l.Append(ctx, conv, last, events.New(conv, "call-app", 0, calls.Actor, events.UserAppended{BlockID: "u-app", Text: "from the app"}))
			}
			if err != nil {
				return engine.Output{}, err
			}
			return engine.Output{}, errors.New("400 Bad Request: the model refused the request")
		}), nil
	})
}

// TestTakenOverThenModelFailsStaysTheApps: a request under way when the
// app's call lands, whose model call then fails for good, ended as
// request.failed without taken_over (the failure went the model failure's
// way, not the taken-over one). That failure was then the conversation's
// last step, NotAnApps no longer saw the app, and the next request was
// answered into the app's record. A failure stored after the app's step is
// now marked taken over, whatever the request failed of.
func TestTakenOverThenModelFailsStaysTheApps(t *testing.T) {
	srv := natstest.Start(t)
	set, err := profile.Parse([]byte("profiles:\n  default:\n    provider: test.appfails\n    middlewares: []\n"))
	require.NoError(t, err)
	l := startWorker(t, srv, func(c *worker.Config) { c.Profiles = set })
	appFailsLog.Store(l)
	const conv = "taken-then-model-fails"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: "hello"})
	require.NoError(t, err)
	_, err = worker.Await(ctx, l, conv, req.RequestID, 0, 0)
	require.ErrorIs(t, err, worker.ErrFailed)
	t.Logf("failure: %v", err)

	last, err := l.Last(ctx, conv)
	require.NoError(t, err)
	var app bool
	for rec, err := range l.EventsAfter(ctx, conv, 0, 0) {
		require.NoError(t, err)
		if rec.Actor == calls.Actor {
			app = true
		}
	}
	require.True(t, app, "the app's call is in the record")
	assert.ErrorIs(t, worker.NotAnApps(conv, last), worker.ErrAppsConversation,
		"the app's call landed in the conversation: it is the app's (last step: cause %s, %d events)", last.Cause, len(last.Events))

	// The next request, published past the API's check, is dead-lettered,
	// not written into the app's record.
	before, err := l.LastSeq(ctx, conv)
	require.NoError(t, err)
	req2, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: "typed on the wire"})
	require.NoError(t, err)
	waitDeadLetters(t, l, 1, "the later request is dead-lettered")
	var written []string
	for rec, err := range l.EventsAfter(ctx, conv, before, 0) {
		require.NoError(t, err)
		if rec.Cause == req2.RequestID {
			written = append(written, string(rec.Type))
		}
	}
	assert.Empty(t, written, "nothing of a later request is written into the app's record")
}
