package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/worker"
)

func TestPostMessage(t *testing.T) {
	ts, l := startChatAPI(t)
	res := chat(t, ts, l, "pm", "hello there")
	assert.Equal(t, "You said: hello there", res.Answer, "a worker answered the request the API queued")

	id := ulid.Make().String()
	status, out, _ := call(t, ts, "POST", "/conversations/pm/messages", "Bearer "+token,
		`{"text": "again", "request_id": "`+id+`", "data": {"cwd": "/tmp"}, "profile": "default"}`)
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	assert.Equal(t, map[string]any{"request_id": id, "conversation": "pm"}, out, "a given request ID is kept")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res2, err := worker.Await(ctx, l, "pm", id, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, "You said: again", res2.Answer)
}

func TestPostMessageRefusals(t *testing.T) {
	ts, l := startChatAPI(t)
	tests := []struct {
		name       string
		method     string
		path       string
		auth       string
		body       string
		wantStatus int
		want       string
	}{
		{name: "no token", path: "/conversations/pr/messages", body: `{"text": "hi"}`, wantStatus: 401, want: "requires a token"},
		{name: "wrong token", path: "/conversations/pr/messages", auth: "Bearer nope", body: `{"text": "hi"}`, wantStatus: 401, want: "token is wrong"},
		{name: "empty body", path: "/conversations/pr/messages", auth: "Bearer " + token, wantStatus: 400, want: "body is empty"},
		{name: "no text", path: "/conversations/pr/messages", auth: "Bearer " + token, body: `{}`, wantStatus: 400, want: `"text" is empty`},
		{name: "unknown key", path: "/conversations/pr/messages", auth: "Bearer " + token, body: `{"text": "hi", "conversation": "other"}`, wantStatus: 400, want: `unknown field "conversation"`},
		{name: "text too long", path: "/conversations/pr/messages", auth: "Bearer " + token, body: `{"text": "` + strings.Repeat("x", worker.DefaultMaxTextBytes+1) + `"}`, wantStatus: 400, want: "the limit is 65536"},
		{name: "request ID not a ULID", path: "/conversations/pr/messages", auth: "Bearer " + token, body: `{"text": "hi", "request_id": "abc"}`, wantStatus: 400, want: "is not a ULID"},
		{name: "bad conversation ID", path: "/conversations/p.r/messages", auth: "Bearer " + token, body: `{"text": "hi"}`, wantStatus: 400, want: "which NATS subjects forbid"},
		{name: "GET is not a route", method: "GET", path: "/conversations/pr/messages", auth: "Bearer " + token, wantStatus: 405, want: "allowed methods are POST"},
		// The keys of turnlog's middlewares cannot be set by a request:
		// before, this one gave the conversation no system prompt.
		{name: "reserved data key", path: "/conversations/pr/messages", auth: "Bearer " + token, body: `{"text": "hi", "data": {"systemprompt.none": "x", "tz": "UTC"}}`,
			wantStatus: 400, want: `"data": data key "systemprompt.none" is reserved`},
		{name: "reserved data key of another namespace", path: "/conversations/pr/messages", auth: "Bearer " + token, body: `{"text": "hi", "data": {"trust.operator": "me"}}`,
			wantStatus: 400, want: "allow_request_data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "POST"
			}
			status, out, _ := call(t, ts, method, tc.path, tc.auth, tc.body)
			assert.Equal(t, tc.wantStatus, status)
			assert.Contains(t, out["error"], tc.want)
		})
	}
	n, err := l.LastSeq(context.Background(), "pr")
	require.NoError(t, err)
	assert.Zero(t, n, "no refused message reached the log")
}

// sse is one Server-Sent Event.
type sse struct {
	event string
	data  string
}

// openStream opens GET path and yields its events until the test ends.
func openStream(t *testing.T, ts *httptest.Server, path string) (<-chan sse, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before ts.Close, which waits for open requests
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := ts.Client().Do(req)
	require.NoError(t, err)
	out := make(chan sse, 1024)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.event != "" || cur.data != "" {
					out <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, "event: "):
				cur.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				cur.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out, res
}

// next reads the next event, failing the test if the stream ends first.
func next(t *testing.T, events <-chan sse) sse {
	t.Helper()
	select {
	case e, ok := <-events:
		require.True(t, ok, "the stream ended")
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no event on the stream")
		return sse{}
	}
}

func TestStreamDeltasAndEvents(t *testing.T) {
	ts, l := startChatAPI(t)
	chat(t, ts, l, "st", "warm up") // the stream starts after these events
	before, err := l.Load(context.Background(), "st")
	require.NoError(t, err)

	stream, res := openStream(t, ts, "/conversations/st/stream") // no token: a read
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/event-stream; charset=utf-8", res.Header.Get("Content-Type"))
	ready := next(t, stream)
	require.Equal(t, "ready", ready.event)
	var r httpapi.StreamReady
	require.NoError(t, json.Unmarshal([]byte(ready.data), &r))
	assert.Equal(t, httpapi.StreamReady{Conversation: "st", Seq: before.Seq, Events: before.Events}, r)

	status, out, _ := call(t, ts, "POST", "/conversations/st/messages", "Bearer "+token, `{"text": "stream me please"}`)
	require.Equal(t, http.StatusAccepted, status)
	id := out["request_id"].(string)

	var streamed strings.Builder
	var seen []string
	wantN := before.Events + 1
	for {
		e := next(t, stream)
		if e.event == "delta" {
			var d worker.Delta
			require.NoError(t, json.Unmarshal([]byte(e.data), &d))
			assert.Equal(t, id, d.RequestID)
			if d.Kind == "llm_text" {
				streamed.WriteString(d.Text)
			}
			continue
		}
		require.Equal(t, "event", e.event, e.data)
		var ev struct {
			N       int             `json:"n"`
			Type    string          `json:"type"`
			Cause   string          `json:"cause"`
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.data), &ev))
		assert.Equal(t, wantN, ev.N, "positions continue from ready's, without a gap")
		assert.Equal(t, id, ev.Cause)
		assert.NotEmpty(t, ev.Payload)
		wantN++
		seen = append(seen, ev.Type)
		if ev.Type == "request.completed" {
			break
		}
	}
	assert.Equal(t, "You said: stream me please", streamed.String(), "the answer came as deltas")
	assert.Equal(t, []string{"user.appended", "inference.started", "reasoning.appended", "llm_text.appended",
		"inference.finished", "request.completed"}, seen, "every event the request stored, in order")
}

// TestStreamDeltaAfterItsRequestsFirstEvent pins the order a client sees:
// a worker stores user.appended before it asks the model, so no delta of
// a request may reach the stream before that event, however much faster
// core NATS carries the delta than the log's watch carries the event.
func TestStreamDeltaAfterItsRequestsFirstEvent(t *testing.T) {
	ts, l := startChatAPI(t)
	stream, _ := openStream(t, ts, "/conversations/ordered/stream")
	require.Equal(t, "ready", next(t, stream).event)

	req := ulid.Make().String()
	delta, _ := json.Marshal(worker.Delta{RequestID: req, Kind: "llm_text", Text: "early words"})
	nc := l.JetStream().Conn()
	require.NoError(t, nc.Publish(l.Names().DeltaSubject("ordered"), delta))
	require.NoError(t, nc.Flush())
	// The delta has reached the server, and so the stream's subscription,
	// before the event is stored.
	time.Sleep(200 * time.Millisecond)
	ev := events.New("ordered", req, 0, worker.ActorWorker, events.UserAppended{BlockID: ulid.Make().String(), Text: "hi"})
	_, err := l.Append(context.Background(), "ordered", 0, ev)
	require.NoError(t, err)

	first, second := next(t, stream), next(t, stream)
	assert.Equal(t, "event", first.event, "the request's user.appended comes first: %s", first.data)
	assert.Contains(t, first.data, `"user.appended"`)
	assert.Equal(t, "delta", second.event)
	assert.Contains(t, second.data, "early words", "a held delta is sent, not dropped")
}

func TestStreamOfANewConversation(t *testing.T) {
	ts, _ := startChatAPI(t)
	stream, _ := openStream(t, ts, "/conversations/brand-new/stream")
	ready := next(t, stream)
	require.Equal(t, "ready", ready.event)
	assert.JSONEq(t, `{"conversation": "brand-new", "seq": 0, "events": 0}`, ready.data)
	status, _, _ := call(t, ts, "POST", "/conversations/brand-new/messages", "Bearer "+token, `{"text": "first"}`)
	require.Equal(t, http.StatusAccepted, status)
	for {
		e := next(t, stream)
		if e.event == "event" {
			assert.Contains(t, e.data, `"n":1,`, "the first event is n=1")
			break
		}
	}
}

func TestStreamRefusesABadID(t *testing.T) {
	ts, _ := startChatAPI(t)
	status, out, _ := call(t, ts, "GET", "/conversations/a.%3E/stream", "Bearer "+token, "")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, out["error"], "conversation ID")
}

func TestStreamEndsWhenTheServerShutsDown(t *testing.T) {
	_, l := startChatAPI(t)
	api, err := httpapi.New(httpapi.Config{Log: l})
	require.NoError(t, err)
	running, err := httpapi.Start(context.Background(), "127.0.0.1:0", api, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = running.Close() })

	res, err := http.Get(running.URL() + "/conversations/bye/stream")
	require.NoError(t, err)
	defer res.Body.Close()
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "event: ") {
				events <- strings.TrimPrefix(line, "event: ")
			}
		}
	}()
	require.Equal(t, "ready", <-events)
	require.NoError(t, running.Close())
	assert.Equal(t, "end", <-events, "Shutdown ends open streams instead of waiting out its grace period")
	_, open := <-events
	assert.False(t, open, "and the response is over")
}

// TestPostMessageRefusesARequestIDOfAnotherConversation: a request_id
// already sent to another conversation is refused at once with 409 and
// the reason (it used to be answered 202 and dropped as a duplicate);
// the same request sent again to its own conversation is still accepted,
// and stored once.
func TestPostMessageRefusesARequestIDOfAnotherConversation(t *testing.T) {
	ts, l := startChatAPI(t)
	id := ulid.Make().String()
	body := `{"text": "hello", "request_id": "` + id + `"}`
	status, out, _ := call(t, ts, "POST", "/conversations/owner/messages", "Bearer "+token, body)
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := worker.Await(ctx, l, "owner", id, 0, 0)
	require.NoError(t, err)

	status, out, _ = call(t, ts, "POST", "/conversations/thief/messages", "Bearer "+token, body)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, out["error"], "already used by another conversation")
	assert.Contains(t, out["error"], id)
	assert.NotContains(t, out["error"], "owner", "the other conversation is not named")

	status, out, _ = call(t, ts, "POST", "/conversations/owner/messages", "Bearer "+token, body)
	assert.Equal(t, http.StatusAccepted, status, "a re-send to its own conversation is idempotent: %v", out)
	n, err := l.LastSeq(ctx, "thief")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing reached the other conversation")
}

// TestPostMessageRefusesARequestIDUsedOverNATS: a request_id first sent
// over NATS (worker.Send, `turnlog chat`), which the API's claims do not
// know of, is refused with 409 when posted to another conversation within
// the requests stream's duplicate window. It used to be answered 202 and
// dropped by JetStream as a duplicate. The refused claim does not stick:
// the owner can still re-send the request through the API.
func TestPostMessageRefusesARequestIDUsedOverNATS(t *testing.T) {
	ts, l := startChatAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := ulid.Make().String()
	_, err := worker.Send(ctx, l, worker.Request{Conversation: "owner", RequestID: id, Text: "hello"})
	require.NoError(t, err)
	_, err = worker.Await(ctx, l, "owner", id, 0, 0)
	require.NoError(t, err)

	body := `{"text": "hello", "request_id": "` + id + `"}`
	status, out, _ := call(t, ts, "POST", "/conversations/thief/messages", "Bearer "+token, body)
	assert.Equal(t, http.StatusConflict, status, "%v", out)
	assert.Contains(t, out["error"], "already used by another conversation")
	assert.Contains(t, out["error"], id)
	n, err := l.LastSeq(ctx, "thief")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing reached the other conversation")

	status, out, _ = call(t, ts, "POST", "/conversations/owner/messages", "Bearer "+token, body)
	assert.Equal(t, http.StatusAccepted, status, "the owner's re-send is idempotent: %v", out)
	users := 0
	for rec, err := range l.Events(ctx, "owner") {
		require.NoError(t, err)
		if rec.Type == events.TypeUserAppended {
			users++
		}
	}
	assert.Equal(t, 1, users, "stored once")
}
