package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestRawRequestIntoAnAppsConversationIsDeadLettered: the HTTP API and
// turnlog chat refuse a message into a conversation the gateway records
// from an app's calls, but another NATS client can publish one straight
// onto the chat subject. The worker does not answer it into the app's
// record: the request is kept whole as a dead letter saying why, and the
// conversation is left as the app made it. That holds whether the worker
// never saw the conversation or answered in it before the app took it
// over (its cached Turn is then behind the log).
func TestRawRequestIntoAnAppsConversationIsDeadLettered(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The worker answered in "taken" first, so it holds its Turn.
	_, err := ask(t, l, "taken", "hello")
	require.NoError(t, err)
	takenSeq, err := l.LastSeq(ctx, "taken")
	require.NoError(t, err)

	appSeq := map[string]uint64{}
	for conv, after := range map[string]uint64{"app-only": 0, "taken": takenSeq} {
		seq, err := l.Append(ctx, conv, after, events.New(conv, "call-"+conv, 0, calls.Actor, events.UserAppended{BlockID: "u-" + conv, Text: "from the app"}))
		require.NoError(t, err)
		appSeq[conv] = seq
		_, err = l.JetStream().Publish(ctx, l.Names().ChatSubject(conv), []byte(`{"text":"typed on the wire"}`))
		require.NoError(t, err)
	}

	dead := waitDeadLetters(t, l, 2, "both requests dead-lettered")
	subjects := map[string]bool{}
	for _, d := range dead {
		subjects[d.Subject] = true
		assert.Contains(t, d.Reason, "the conversation is an app's", d.Subject)
		assert.Contains(t, d.Reason, "turnlog fork", d.Subject)
		assert.Equal(t, `{"text":"typed on the wire"}`, string(d.Data), "the request is kept as sent")
	}
	assert.Equal(t, map[string]bool{l.Names().ChatSubject("app-only"): true, l.Names().ChatSubject("taken"): true}, subjects,
		"each dead letter names its conversation's chat subject")
	for conv, seq := range appSeq {
		last, err := l.LastSeq(ctx, conv)
		require.NoError(t, err)
		assert.Equal(t, seq, last, "nothing written into %s after the app's call", conv)
	}
}
