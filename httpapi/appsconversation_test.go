package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/replay"
)

// appsConversation stores app as a conversation the recording gateway
// wrote (one call's user message) and returns its last sequence.
func appsConversation(t *testing.T, l *eventlog.Log, app string) uint64 {
	t.Helper()
	seq, err := l.Append(context.Background(), app, 0,
		events.New(app, "call-"+app, 0, calls.Actor, events.ConversationStarted{}),
		events.New(app, "call-"+app, 0, calls.Actor, events.UserAppended{BlockID: "u1", Text: "hello"}))
	require.NoError(t, err)
	return seq
}

// TestMessageIntoAnAppsConversationIsRefused: a conversation the recording
// gateway records from an app's calls is the app's. A message sent to it
// from the console was answered by the worker into the app's record, and
// the app's next call, which never saw that answer, showed as rewriting
// its history (three history_rewritten findings against the app, by hand
// with serve). It is refused with 409, saying to fork it, and nothing is
// queued or written; a fork takes messages.
func TestMessageIntoAnAppsConversationIsRefused(t *testing.T) {
	ts, l := startChatAPI(t)
	ctx := context.Background()
	const app = "app-chat"
	seq := appsConversation(t, l, app)

	status, out, _ := call(t, ts, "POST", "/conversations/"+app+"/messages", "Bearer "+token, `{"text": "typed in the console"}`)
	require.Equal(t, http.StatusConflict, status, "%v", out)
	assert.Contains(t, out["error"], "recorded by the gateway")
	assert.Contains(t, out["error"], "turnlog fork "+app)
	after, err := l.LastSeq(ctx, app)
	require.NoError(t, err)
	assert.Equal(t, seq, after, "nothing was written into the app's record")

	forked, err := replay.Fork(ctx, l, app, 0, "app-chat-fork")
	require.NoError(t, err)
	res := chat(t, ts, l, forked.Conversation, "and in the fork?")
	assert.Empty(t, res.Failed, "the fork is the worker's to answer in")
}

// TestStreamSaysARequestWasDeadLettered: a request the worker keeps as a
// dead letter never ends as request.completed or request.failed in its
// conversation, so a client following the stream (the console's chat page)
// waited for ever. The stream now says so with a "dead_letter" event
// naming the request and the reason, and only for its own conversation.
// Here the requests are published straight onto the chat subject, past the
// API's own refusal, as another NATS client (or one that lost the race
// with the app's next call) would.
func TestStreamSaysARequestWasDeadLettered(t *testing.T) {
	ts, l := startChatAPI(t)
	ctx := context.Background()
	appsConversation(t, l, "app-watched")
	appsConversation(t, l, "app-other")
	stream, _ := openStream(t, ts, "/conversations/app-watched/stream")
	require.Equal(t, "ready", next(t, stream).event)

	const otherID, watchedID = "01JAAAAAAAAAAAAAAAAAAAAAAA", "01JBBBBBBBBBBBBBBBBBBBBBBB"
	_, err := l.JetStream().Publish(ctx, l.Names().ChatSubject("app-other"), []byte(`{"text":"x","request_id":"`+otherID+`"}`))
	require.NoError(t, err)
	_, err = l.JetStream().Publish(ctx, l.Names().ChatSubject("app-watched"), []byte(`{"text":"y","request_id":"`+watchedID+`"}`))
	require.NoError(t, err)

	e := next(t, stream)
	require.Equal(t, "dead_letter", e.event, "%s", e.data)
	var dl httpapi.StreamDeadLetter
	require.NoError(t, json.Unmarshal([]byte(e.data), &dl))
	assert.Equal(t, watchedID, dl.RequestID, "the watched conversation's request, not the other's")
	assert.Contains(t, dl.Reason, "the conversation is an app's")
	assert.False(t, dl.Time.IsZero())
}

// TestStreamTellsOfADeadLetterStoredJustBefore: a client whose stream was
// cut (the console's EventSource reconnects by itself) missed a dead
// letter stored in between, and waited for its request for ever. A stream
// now begins, after "ready", with the conversation's dead letters of the
// last minutes.
func TestStreamTellsOfADeadLetterStoredJustBefore(t *testing.T) {
	ts, l := startChatAPI(t)
	ctx := context.Background()
	const app, id = "app-gap", "01JCCCCCCCCCCCCCCCCCCCCCCC"
	appsConversation(t, l, app)
	_, err := l.JetStream().Publish(ctx, l.Names().ChatSubject(app), []byte(`{"text":"y","request_id":"`+id+`"}`))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, err := l.DeadLetterCount(ctx)
		return err == nil && n == 1
	}, 20*time.Second, 20*time.Millisecond)

	stream, _ := openStream(t, ts, "/conversations/"+app+"/stream")
	require.Equal(t, "ready", next(t, stream).event)
	e := next(t, stream)
	require.Equal(t, "dead_letter", e.event, "%s", e.data)
	var dl httpapi.StreamDeadLetter
	require.NoError(t, json.Unmarshal([]byte(e.data), &dl))
	assert.Equal(t, id, dl.RequestID)
	assert.Contains(t, dl.Reason, "the conversation is an app's")
}

// TestStreamTellsEachDeadLetterWithoutARequestID: a request published
// without a request_id (the raw publish http-api.md shows) has the ID the
// worker derived for it, but its dead letter did not say it: the stream
// sent request_id "" and, taking every such dead letter for the same
// request, told only the first. Each now comes with the ID the worker
// served it under.
func TestStreamTellsEachDeadLetterWithoutARequestID(t *testing.T) {
	ts, l := startChatAPI(t)
	ctx := context.Background()
	const app = "app-noid"
	appsConversation(t, l, app)
	stream, _ := openStream(t, ts, "/conversations/"+app+"/stream")
	require.Equal(t, "ready", next(t, stream).event)
	for _, text := range []string{"first", "second"} {
		_, err := l.JetStream().Publish(ctx, l.Names().ChatSubject(app), []byte(`{"text":"`+text+`"}`))
		require.NoError(t, err)
	}
	var ids []string
	for len(ids) < 2 {
		e := next(t, stream)
		require.Equal(t, "dead_letter", e.event, "%s", e.data)
		var dl httpapi.StreamDeadLetter
		require.NoError(t, json.Unmarshal([]byte(e.data), &dl))
		_, perr := ulid.ParseStrict(dl.RequestID)
		require.NoError(t, perr, "the ID the worker derived: %q", dl.RequestID)
		ids = append(ids, dl.RequestID)
	}
	assert.NotEqual(t, ids[0], ids[1], "two requests, two IDs")
	letters, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	var stored []string
	for _, d := range letters {
		stored = append(stored, d.RequestID())
	}
	assert.ElementsMatch(t, ids, stored, "as the dead letters say")
}

// TestStreamTellsADeadLetterAmongMany: every stream hears the dead
// letters of all conversations, through a buffer of 256; a burst of other
// conversations' (a misbehaving client's flood) overflowed it, NATS
// dropped what did not fit, and this conversation's notice among them was
// never told. A stream that finds its subscription dropped notices reads
// the recent dead letters again and tells those it had not.
func TestStreamTellsADeadLetterAmongMany(t *testing.T) {
	ts, l := startChatAPI(t)
	ctx := context.Background()
	const app, id = "app-flooded", "01JEEEEEEEEEEEEEEEEEEEEEEE"
	appsConversation(t, l, app)
	stream, _ := openStream(t, ts, "/conversations/"+app+"/stream")
	require.Equal(t, "ready", next(t, stream).event)

	nc := l.JetStream().Conn()
	other := func(i int) {
		d, err := json.Marshal(eventlog.DeadLetter{Subject: l.Names().ChatSubject("elsewhere"), Reason: "flood", Time: time.Now().UTC(), Data: []byte(`{"text":"x"}`)})
		require.NoError(t, err)
		require.NoError(t, nc.Publish(l.Names().DeadLetterSubject(), d))
	}
	for i := range 3000 {
		other(i)
	}
	require.NoError(t, l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: l.Names().ChatSubject(app), Reason: "kept", Data: []byte(`{"text":"y","request_id":"` + id + `"}`)}))
	for i := range 3000 {
		other(i)
	}
	require.NoError(t, nc.Flush())
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-stream:
			if e.event != "dead_letter" {
				continue
			}
			var dl httpapi.StreamDeadLetter
			require.NoError(t, json.Unmarshal([]byte(e.data), &dl))
			assert.Equal(t, id, dl.RequestID)
			return
		case <-deadline:
			t.Fatal("the conversation's dead letter, stored amid a flood of others', was never told")
		}
	}
}
