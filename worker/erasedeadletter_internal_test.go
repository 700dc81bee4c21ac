package worker

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// TestDeadLetterOfAnErasedConversationIsDropped: a worker holding a
// request (its dead letter held while the storage was full, or about to
// be stored) when the request's conversation was erased stored the dead
// letter afterwards, the request's text with it. The log now refuses it
// (eventlog.ErrConversationErased), and the worker took the refusal for a
// failure to store: the request was tried again, until its last delivery
// ended it with "the request is lost". It now drops the request, as it
// drops one whose conversation was erased while it served it: counted as
// erased, nothing stored.
func TestDeadLetterOfAnErasedConversationIsDropped(t *testing.T) {
	w, l, ctx := idleWorker(t)
	const conv = "app-erased"
	_, err := l.Append(ctx, conv, 0, events.New(conv, "call-app", 0, calls.Actor, events.UserAppended{BlockID: "u-app", Text: "from the app"}))
	require.NoError(t, err)
	_, err = Send(ctx, l, Request{Conversation: conv, Text: "my private question"})
	require.NoError(t, err)
	s, err := l.JetStream().Stream(ctx, l.Names().RequestsStream)
	require.NoError(t, err)
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	m := <-batch.Messages()
	require.NotNil(t, m, "the request is delivered")
	meta, err := m.Metadata()
	require.NoError(t, err)

	time.Sleep(10 * time.Millisecond)
	_, err = l.Erase(ctx, conv)
	require.NoError(t, err)
	w.deadLetter(ctx, m, meta, l.Names().ChatSubject(conv), "the conversation is an app's")

	dead, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, dead, "the erased conversation's request is not a dead letter")
	assert.Equal(t, 1.0, counterValue(t, w.metrics.requests.WithLabelValues("erased")), "counted as erased")
	assert.Zero(t, counterValue(t, w.metrics.deadLetters), "no dead letter counted")
}
