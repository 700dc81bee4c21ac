package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
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

// TestRequestsWithoutAConversationAreDeadLettered: requests published on the
// literal subjects turnlog.chat.* and turnlog.chat.> (or any subject whose
// last token is no conversation ID) cannot end in a conversation: they
// leave the requests stream and are kept as dead letters with the subject
// and the reason, counted by the worker's metric.
func TestRequestsWithoutAConversationAreDeadLettered(t *testing.T) {
	srv := natstest.Start(t)
	l, w := runWorker(t, srv, nil)
	ctx := context.Background()
	js := l.JetStream()
	prefix := l.Names().Prefix
	for _, subject := range []string{prefix + ".chat.*", prefix + ".chat.>", prefix + ".chat.evil$id"} {
		_, err := js.Publish(ctx, subject, []byte(`{"text":"anyone?"}`))
		require.NoError(t, err, subject)
	}
	var dead []eventlog.DeadLetter
	require.Eventually(t, func() bool {
		var err error
		dead, err = l.DeadLetters(ctx, 10)
		require.NoError(t, err)
		return len(dead) == 3
	}, 20*time.Second, 20*time.Millisecond, "three dead letters")
	subjects := map[string]string{}
	for _, d := range dead {
		subjects[d.Subject] = d.Reason
		assert.Equal(t, `{"text":"anyone?"}`, string(d.Data), "the request is kept as sent")
		assert.False(t, d.Time.IsZero())
		assert.NotZero(t, d.RequestSeq)
	}
	for _, s := range []string{prefix + ".chat.*", prefix + ".chat.>", prefix + ".chat.evil$id"} {
		assert.Contains(t, subjects[s], "no valid conversation", s)
	}
	require.Eventually(t, func() bool {
		s, err := js.Stream(ctx, l.Names().RequestsStream)
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs == 0
	}, 20*time.Second, 20*time.Millisecond, "the requests left the requests stream")
	metrics := scrape(t, w)
	assert.Contains(t, metrics, "turnlog_dead_letters_total 3")
	assert.Contains(t, metrics, "turnlog_dead_letters_stored 3")
}

// scrape returns the worker's metrics in the Prometheus text format.
func scrape(t *testing.T, w *worker.Worker) string {
	t.Helper()
	rec := httptest.NewRecorder()
	w.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// TestRequestsToACorruptConversationFailNamingTheMessage: a message on the
// conversation's subject that does not decode (garbage from another NATS
// client) makes later requests end as request.failed naming its sequence,
// whether it is the last message or further back; they used to be
// acknowledged without a trace.
func TestRequestsToACorruptConversationFailNamingTheMessage(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := ask(t, l, "spoiled", "hello")
	require.NoError(t, err)
	// A damaged step: turnlog's headers, bytes that do not decode (without
	// a message ID it is not turnlog's, and ignored: see eventlog).
	ack, err := l.JetStream().Publish(ctx, l.Names().EventsSubject("spoiled"), []byte("garbage"), jetstream.WithMsgID("damaged:0"))
	require.NoError(t, err)
	seq := fmt.Sprint(ack.Sequence)

	for i, text := range []string{"first after the garbage", "second after the garbage"} {
		req, err := worker.Send(ctx, l, worker.Request{Conversation: "spoiled", Text: text})
		require.NoError(t, err)
		res, err := worker.Await(ctx, l, "spoiled", req.RequestID, ack.Sequence, 0)
		require.ErrorIs(t, err, worker.ErrFailed, "request %d", i)
		assert.Contains(t, res.Failed, "message "+seq, "request %d names the bad message", i)
		assert.Contains(t, res.Failed, "turnlog repair --yes spoiled")
		var types []events.Type
		for _, rec := range res.Events {
			types = append(types, rec.Type)
		}
		assert.Equal(t, []events.Type{events.TypeUserAppended, events.TypeRequestFailed}, types, "the user's text is kept")
	}
}

// TestOrphanedReasoningFailureNamesTheProfileSetting: an old reasoning
// block without its follower fails every request under the default
// profile; the reason says which profile setting repairs it, and the
// repair command, not a Go field.
func TestOrphanedReasoningFailureNamesTheProfileSetting(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, nil)
	ctx := context.Background()
	_, err := l.Append(ctx, "old", 0, events.New("old", "seed", 0, "import", events.ReasoningAppended{BlockID: "r1", Text: "thinking"}))
	require.NoError(t, err)
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "old", Text: "hello?"})
	require.NoError(t, err)
	reason := failedReason(t, l, "old")
	assert.Contains(t, reason, "reasoning block without its follower")
	assert.Contains(t, reason, "reasoningguard_repair", "the profile setting")
	assert.Contains(t, reason, `profile "default"`)
	assert.Contains(t, reason, "turnlog repair --yes old")
	assert.NotContains(t, reason, "ReasoningGuardConfig")
}

// TestSendSaysTheQueueIsFull: a request over the requests stream's limit
// is refused to its sender with ErrQueueFull; nothing is stored.
func TestSendSaysTheQueueIsFull(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithRequestLimits(eventlog.RequestLimits{MaxAge: time.Hour, MaxBytes: 8 << 20, MaxPerConversation: 1}))
	require.NoError(t, err)
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "busy", Text: "one"})
	require.NoError(t, err)
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "busy", Text: "two"})
	require.ErrorIs(t, err, worker.ErrQueueFull)
	assert.Contains(t, err.Error(), "maximum messages per subject exceeded")
}

// TestSendRefusesARequestIDOfAnotherConversation: worker.Send of a request
// ID that another conversation used within the requests stream's
// duplicate window is refused with an error matching
// eventlog.ErrCauseReused, whether that request is still queued (the
// error names its conversation) or already answered. JetStream drops such
// a request as a duplicate, and Send used to return nil: the conversation
// got no event, and there was no dead letter. The same request sent again
// to its own conversation is still accepted, and stored once.
func TestSendRefusesARequestIDOfAnotherConversation(t *testing.T) {
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	id := ulid.Make().String()
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "owner", RequestID: id, Text: "hello"})
	require.NoError(t, err)

	// No worker yet: the request waits in the queue.
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "thief", RequestID: id, Text: "hello"})
	require.ErrorIs(t, err, eventlog.ErrCauseReused, "refused while the owner's request is queued")
	assert.Contains(t, err.Error(), id)
	assert.Contains(t, err.Error(), `conversation "owner"`, "the error names the conversation the ID was sent to")
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "owner", RequestID: id, Text: "hello"})
	require.NoError(t, err, "a re-send to its own conversation is idempotent")

	startWorker(t, srv, nil)
	_, err = worker.Await(ctx, l, "owner", id, 0, 0)
	require.NoError(t, err)
	// Answered: the request left the queue, and is still within the
	// duplicate window. The worker acknowledges a request after its end
	// is stored, so Await can return while it is still queued: wait for
	// the queue to be empty, or the refusal names the owner from the
	// queued copy (the first case, above).
	require.Eventually(t, func() bool { return pending(t, l) == 0 }, 20*time.Second, 20*time.Millisecond, "the answered request left the queue")
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "thief", RequestID: id, Text: "hello"})
	require.ErrorIs(t, err, eventlog.ErrCauseReused, "refused once the owner's request was answered")
	assert.Contains(t, err.Error(), id)
	assert.Contains(t, err.Error(), "another conversation")
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "owner", RequestID: id, Text: "hello"})
	require.NoError(t, err, "a re-send to its own conversation is idempotent")

	require.Eventually(t, func() bool { return pending(t, l) == 0 }, 20*time.Second, 20*time.Millisecond, "nothing left in the queue")
	n, err := l.LastSeq(ctx, "thief")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing reached the other conversation")
	users := 0
	for rec, err := range l.Events(ctx, "owner") {
		require.NoError(t, err)
		if rec.Type == events.TypeUserAppended {
			users++
		}
	}
	assert.Equal(t, 1, users, "the owner's request is stored once")
}
