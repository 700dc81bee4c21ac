package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// appCallAt returns a worker fault that, at the n-th time point fires,
// appends an app's call (the gateway's step) to conv, as the app's next
// call landing then would, and fails with crash when it is set.
func appCallAt(l **eventlog.Log, conv, point string, n int32, crash error) func(string) error {
	var seen atomic.Int32
	return func(p string) error {
		if p != point || seen.Add(1) != n {
			return nil
		}
		ctx := context.Background()
		last, err := (*l).LastSeq(ctx, conv)
		if err == nil {
			_, err = (*l).Append(ctx, conv, last, events.New(conv, "call-app", 0, calls.Actor, events.UserAppended{BlockID: "u-app", Text: "from the app"}))
		}
		if err != nil {
			return err
		}
		return crash
	}
}

// requestsLeft waits until the requests stream holds no request (each
// was acknowledged or terminated).
func requestsLeft(t *testing.T, l *eventlog.Log) {
	t.Helper()
	require.Eventually(t, func() bool {
		s, err := l.JetStream().Stream(t.Context(), l.Names().RequestsStream)
		require.NoError(t, err)
		info, err := s.Info(t.Context(), jetstream.WithSubjectFilter(">"))
		require.NoError(t, err)
		return info.State.Msgs == 0
	}, 30*time.Second, 20*time.Millisecond, "the request left the requests stream")
}

// TestAnsweredRequestWhoseAckWasLostIsNotDeadLettered: a request answered
// in full whose ack was lost, the app's call landing before the
// redelivery, was dead-lettered on the redelivery as "the conversation is
// an app's", though it had been answered. The redelivery now finds the
// request's own end behind the app's step and is acknowledged.
func TestAnsweredRequestWhoseAckWasLostIsNotDeadLettered(t *testing.T) {
	srv := natstest.Start(t)
	const conv = "answered"
	var l *eventlog.Log
	l = startWorker(t, srv, func(c *worker.Config) {
		c.Fault = appCallAt(&l, conv, "completed", 1, errors.New("crash after the answer, before the ack"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: "hello"})
	require.NoError(t, err)
	res, err := worker.Await(ctx, l, conv, req.RequestID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, "You said: hello", res.Answer)

	requestsLeft(t, l)
	dead, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, dead, "an answered request is not a dead letter")
	last, err := l.Last(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, "call-app", last.Cause, "the app's step is still the last: nothing more written")
}

// TestRequestUnderWayWhenTheAppTookOverEndsFailed: the app's call lands
// between a request's first step and its next. The request was
// dead-lettered with its first step left open in the app's record (a user
// block and a model call that never ended). It now ends there as
// request.failed saying why, its model call closed, and nothing else of it
// is written.
func TestRequestUnderWayWhenTheAppTookOverEndsFailed(t *testing.T) {
	const conv = "under-way"
	l, ctx, req, err := takenOverRequest(t, conv)
	assert.Contains(t, err.Error(), "taken over by an app")

	requestsLeft(t, l)
	dead, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, dead)
	view, err := replay.Calls(ctx, l, conv, replay.Page{})
	require.NoError(t, err)
	require.Len(t, view.Calls, 1)
	assert.Equal(t, replay.CallStatus("failed"), view.Calls[0].Status, "the model call is closed, not open for ever")
	var types []string
	for rec, err := range l.EventsAfter(ctx, conv, 0, 0) {
		require.NoError(t, err)
		if rec.Cause == req.RequestID {
			types = append(types, string(rec.Type))
		}
	}
	assert.Equal(t, "request.failed", types[len(types)-1], "the request ends: %v", types)
	assert.NotContains(t, types, "llm_text.appended", "nothing was answered into the app's record")
}

// TestRequestAfterATakenOverFailureIsDeadLettered: once a request under
// way when the app's call landed ends as request.failed, the
// conversation's last step is the worker's failure, not the gateway's.
// NotAnApps read the last step alone, so the conversation no longer
// counted as the app's: the next request (raw, and equally one the HTTP
// API or turnlog chat let through) was answered into the app's record,
// from the worker's cached Turn too. The failure now says the request was
// taken over (request.failed's taken_over), which NotAnApps reads.
func TestRequestAfterATakenOverFailureIsDeadLettered(t *testing.T) {
	const conv = "taken-then-chat"
	l, ctx, _, _ := takenOverRequest(t, conv)
	requestsLeft(t, l)

	last, err := l.Last(ctx, conv)
	require.NoError(t, err)
	assert.ErrorIs(t, worker.NotAnApps(conv, last), worker.ErrAppsConversation, "what a client asks before it sends")

	before, err := l.LastSeq(ctx, conv)
	require.NoError(t, err)
	_, err = l.JetStream().Publish(ctx, l.Names().ChatSubject(conv), []byte(`{"text":"typed on the wire"}`))
	require.NoError(t, err)
	dead := waitDeadLetters(t, l, 1, "the later request is dead-lettered")
	assert.Contains(t, dead[0].Reason, "the conversation is an app's")
	after, err := l.LastSeq(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing more written into the app's record")
}

// TestRequestReusingTheAppsCallIDIsDeadLettered: the gateway's call IDs
// are ULIDs anyone who reads the conversation sees. A raw request sent
// with the app's call ID as its request_id was taken for a resumption of
// that call's "request" (its cause), which skipped the app's-conversation
// check: the worker wrote its answer into the app's record under the
// app's own cause. A step only counts as a request's own when the worker
// wrote it.
func TestRequestReusingTheAppsCallIDIsDeadLettered(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const conv = "app-conv"
	callID := ulid.Make().String()
	seq, err := l.Append(ctx, conv, 0, events.New(conv, callID, 0, calls.Actor, events.UserAppended{BlockID: "u-app", Text: "from the app"}))
	require.NoError(t, err)

	_, err = l.JetStream().Publish(ctx, l.Names().ChatSubject(conv), []byte(`{"text":"typed on the wire","request_id":"`+callID+`"}`))
	require.NoError(t, err)
	dead := waitDeadLetters(t, l, 1, "the request is dead-lettered")
	assert.Contains(t, dead[0].Reason, "the conversation is an app's")
	last, err := l.LastSeq(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, seq, last, "nothing written into the app's record")
}

// takenOverRequest sends a request into conv with a worker at which an
// app's call lands between the request's first step and its next, and
// returns once the request ended failed, with the error Await gave; ctx
// lasts 30 s.
func takenOverRequest(t *testing.T, conv string) (*eventlog.Log, context.Context, worker.Request, error) {
	t.Helper()
	srv := natstest.Start(t)
	var l *eventlog.Log
	l = startWorker(t, srv, func(c *worker.Config) {
		c.Fault = appCallAt(&l, conv, "step", 2, nil)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: "hello"})
	require.NoError(t, err)
	_, err = worker.Await(ctx, l, conv, req.RequestID, 0, 0)
	require.ErrorIs(t, err, worker.ErrFailed)
	return l, ctx, req, err
}

// waitDeadLetters waits until n dead letters are stored, and returns the
// newest 10, oldest first.
func waitDeadLetters(t *testing.T, l *eventlog.Log, n int, why string) []eventlog.DeadLetter {
	t.Helper()
	var dead []eventlog.DeadLetter
	require.Eventually(t, func() bool {
		var err error
		dead, err = l.DeadLetters(context.Background(), 10)
		require.NoError(t, err)
		return len(dead) == n
	}, 20*time.Second, 20*time.Millisecond, why)
	return dead
}
