package httpapi_test

import (
	"context"
	"encoding/json"
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
	"github.com/turnlog/turnlog/replay"
)

// damaged publishes with a message ID, as turnlog's steps are: garbage
// so stored is a damaged step, quarantined (without an ID it would be
// foreign, and ignored: see TestForeignMessagesBlockNoRoute).
func damaged() jetstream.PublishOpt { return jetstream.WithMsgID("damaged:" + ulid.Make().String()) }

// TestACorruptConversationIsReadableOverHTTP: one message that does not
// decode on a conversation's subject used to turn its timeline into a 500
// that blamed NATS and drop it from the list. Now the timeline shows it as
// quarantined, the Turn (which would need to fold it) is refused naming
// it and saying how to repair, and the list still has the conversation.
func TestACorruptConversationIsReadableOverHTTP(t *testing.T) {
	ts, l := startChatAPI(t)
	chat(t, ts, l, "spoiled", "hello")
	ack, err := l.JetStream().Publish(context.Background(), l.Names().EventsSubject("spoiled"), []byte("garbage"), damaged())
	require.NoError(t, err)

	status, out, _ := call(t, ts, "GET", "/conversations/spoiled/timeline", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status, "%v", out)
	evs := out["events"].([]any)
	last := evs[len(evs)-1].(map[string]any)
	assert.Equal(t, "quarantined", last["type"])
	assert.Equal(t, float64(ack.Sequence), last["seq"])
	assert.Contains(t, last["summary"], "turnlog repair --yes spoiled")

	status, out, _ = call(t, ts, "GET", "/conversations/spoiled/turn", "Bearer "+token, "")
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, out["error"], fmt.Sprintf("message %d", ack.Sequence))
	assert.Contains(t, out["error"], "turnlog repair --yes spoiled")
	assert.NotContains(t, out["error"], "NATS is reachable")

	status, out, _ = call(t, ts, "GET", "/conversations", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status, "%v", out)
	assert.Contains(t, fmt.Sprint(out["conversations"]), "spoiled")
}

// TestStreamNamesAQuarantinedMessageAndGoesOn: garbage published while a
// client follows the conversation is announced as "quarantined" and the
// stream goes on to the events after it (here the failure of the next
// request, which names the message).
func TestStreamNamesAQuarantinedMessageAndGoesOn(t *testing.T) {
	ts, l := startChatAPI(t)
	stream := chatAndFollow(t, ts, l, "live")

	ack, err := l.JetStream().Publish(context.Background(), l.Names().EventsSubject("live"), []byte("garbage"), damaged())
	require.NoError(t, err)
	e := next(t, stream)
	require.Equal(t, "quarantined", e.event, e.data)
	var q struct {
		replay.Quarantined
		Time time.Time `json:"time"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.data), &q))
	assert.Equal(t, ack.Sequence, q.Seq)
	assert.WithinDuration(t, time.Now(), q.Time, time.Minute, "the stream says when the message was stored")

	status, out, _ := call(t, ts, "POST", "/conversations/live/messages", "Bearer "+token, `{"text": "still there?"}`)
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	var failed struct {
		Type    events.Type `json:"type"`
		Payload struct {
			Reason string `json:"reason"`
		} `json:"payload"`
	}
	for failed.Type != events.TypeRequestFailed {
		e = next(t, stream)
		require.Equal(t, "event", e.event, e.data)
		require.NoError(t, json.Unmarshal([]byte(e.data), &failed))
	}
	assert.Contains(t, failed.Payload.Reason, fmt.Sprintf("message %d", ack.Sequence))
}

// TestForeignMessagesBlockNoRoute: a NATS reply the server stored on a
// conversation's subject (no headers: not turnlog's) is shown in the
// timeline as foreign, and the Turn, the live stream and the next request
// go on past it.
func TestForeignMessagesBlockNoRoute(t *testing.T) {
	ts, l := startChatAPI(t)
	stream := chatAndFollow(t, ts, l, "victim")
	ack, err := l.JetStream().Publish(context.Background(), l.Names().EventsRoleSubject("victim", "admin"), []byte(`{"stream":"TURNLOG_REQUESTS","seq":1}`))
	require.NoError(t, err)

	status, out, _ := call(t, ts, "GET", "/conversations/victim/turn", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status, "%v", out)
	status, out, _ = call(t, ts, "POST", "/conversations/victim/messages", "Bearer "+token, `{"text": "still there?"}`)
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	e := next(t, stream)
	require.Equal(t, "foreign", e.event, e.data) // named, then passed
	awaitCompleted(t, stream)

	status, out, _ = call(t, ts, "GET", "/conversations/victim/timeline", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status, "%v", out)
	var foreign []map[string]any
	for _, e := range out["events"].([]any) {
		if m := e.(map[string]any); m["type"] == "foreign" {
			foreign = append(foreign, m)
		}
	}
	require.Len(t, foreign, 1)
	assert.Equal(t, float64(ack.Sequence), foreign[0]["seq"])
	assert.Contains(t, foreign[0]["summary"], "not written by turnlog")
}

// TestStreamNamesAForeignMessageAndGoesOn: a message another NATS client
// publishes on a conversation's subject (no turnlog headers) while a
// client follows it is announced as "foreign", with the seq and summary
// the timeline gives it, and the stream goes on to the next request's
// events. It used to be passed over without a word.
func TestStreamNamesAForeignMessageAndGoesOn(t *testing.T) {
	ts, l := startChatAPI(t)
	stream := chatAndFollow(t, ts, l, "visited")

	ack, err := l.JetStream().Publish(context.Background(), l.Names().EventsSubject("visited"), []byte("not a step"))
	require.NoError(t, err)
	e := next(t, stream)
	require.Equal(t, "foreign", e.event, e.data)
	var got struct {
		Seq     uint64    `json:"seq"`
		Type    string    `json:"type"`
		Summary string    `json:"summary"`
		Time    time.Time `json:"time"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.data), &got))
	assert.Equal(t, ack.Sequence, got.Seq)
	assert.Equal(t, "foreign", got.Type)
	assert.WithinDuration(t, time.Now(), got.Time, time.Minute, "the stream says when the message was stored")

	status, out, _ := call(t, ts, "GET", "/conversations/visited/timeline", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status, "%v", out)
	evs := out["events"].([]any)
	last := evs[len(evs)-1].(map[string]any)
	require.Equal(t, "foreign", last["type"])
	assert.Equal(t, last["summary"], got.Summary, "the stream words it as the timeline does")
	assert.Equal(t, got.Time.Format(time.RFC3339Nano), last["time"], "and dates it as the timeline does")

	status, out, _ = call(t, ts, "POST", "/conversations/visited/messages", "Bearer "+token, `{"text": "still there?"}`)
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	awaitCompleted(t, stream)
}

// awaitCompleted reads stream's events until the request's
// request.completed, skipping deltas; any other kind of SSE event, or a
// request.failed, fails the test.
func awaitCompleted(t *testing.T, stream <-chan sse) {
	t.Helper()
	var ev struct {
		Type events.Type `json:"type"`
	}
	for ev.Type != events.TypeRequestCompleted {
		e := next(t, stream)
		if e.event == "delta" {
			continue
		}
		require.Equal(t, "event", e.event, e.data)
		require.NoError(t, json.Unmarshal([]byte(e.data), &ev))
		require.NotEqual(t, events.TypeRequestFailed, ev.Type, e.data)
	}
}

// chatAndFollow has conversation conv answer a "hello", then opens its
// live stream and reads it up to "ready".
func chatAndFollow(t *testing.T, ts *httptest.Server, l *eventlog.Log, conv string) <-chan sse {
	t.Helper()
	chat(t, ts, l, conv, "hello")
	stream, res := openStream(t, ts, "/conversations/"+conv+"/stream")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "ready", next(t, stream).event)
	return stream
}
