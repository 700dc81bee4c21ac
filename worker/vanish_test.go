package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// TestRequestIDReusedByAnotherConversationFails: a request whose ID another
// conversation already used ends at once as request.failed in its own
// conversation, saying why; it is not redelivered until it vanishes.
func TestRequestIDReusedByAnotherConversationFails(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	id := ulid.Make().String()
	_, err := worker.Send(ctx, l, worker.Request{Conversation: "first", RequestID: id, Text: "hello"})
	require.NoError(t, err)
	_, err = worker.Await(ctx, l, "first", id, 0, 0)
	require.NoError(t, err)

	// A raw NATS client (no Nats-Msg-Id) reuses the ID in another
	// conversation.
	_, err = l.JetStream().Publish(ctx, l.Names().ChatSubject("second"), []byte(`{"text":"hi again","request_id":"`+id+`"}`))
	require.NoError(t, err)
	start := time.Now()
	reason := failedReason(t, l, "second")
	assert.Contains(t, reason, "already used by another conversation")
	assert.Contains(t, reason, id)
	assert.Less(t, time.Since(start), 5*time.Second, "ended on its first delivery, not after redeliveries (hang guard)")

	var types []events.Type
	for rec, err := range l.Events(ctx, "second") {
		require.NoError(t, err)
		types = append(types, rec.Type)
		assert.Equal(t, id, rec.Cause, "the failure is recorded under the request's ID")
	}
	assert.Equal(t, []events.Type{events.TypeUserAppended, events.TypeRequestFailed}, types, "the user's text is kept beside the reason")
	for rec, err := range l.Events(ctx, "first") {
		require.NoError(t, err)
		assert.NotEqual(t, events.TypeRequestFailed, rec.Type, "the first conversation is untouched")
	}
}
