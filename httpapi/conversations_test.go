package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	_ "github.com/turnlog/turnlog/engine/scripted" // provider "scripted", the default profile's
	"github.com/turnlog/turnlog/engine/wire"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// startChatAPI serves the API (with token) of an installation that has a
// worker answering with the default profile, and returns the log too.
func startChatAPI(t *testing.T) (*httptest.Server, *eventlog.Log) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Log: l, Conn: srv.Conn, Profiles: profiles, AckWait: 2 * time.Second,
		ShutdownGrace: time.Second, Logger: quiet})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	api, err := httpapi.New(httpapi.Config{Log: l, Token: token, Logger: quiet, Wire: wire.New(nil)})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	return ts, l
}

// chat sends text through the API and waits for the request's end.
func chat(t *testing.T, ts *httptest.Server, l *eventlog.Log, conv, text string) worker.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	body, _ := json.Marshal(map[string]string{"text": text})
	status, out, _ := call(t, ts, "POST", "/conversations/"+conv+"/messages", "Bearer "+token, string(body))
	require.Equal(t, http.StatusAccepted, status, "%v", out)
	res, err := worker.Await(ctx, l, conv, out["request_id"].(string), turn.Seq, turn.Events)
	require.NoError(t, err)
	return res
}

// appendAt stores one event in its own step with the given time, as an
// operator's tool would, and returns the conversation's event count.
func appendAt(t *testing.T, l *eventlog.Log, conv string, at time.Time, p events.Payload) int {
	t.Helper()
	ctx := context.Background()
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	ev := events.New(conv, "op-"+ulid.Make().String(), 0, "test", p)
	ev.Time = at
	_, err = l.Append(ctx, conv, turn.Seq, ev)
	require.NoError(t, err)
	return turn.Events + 1
}

// getJSON decodes a GET answer into v and returns the status.
func getJSON(t *testing.T, ts *httptest.Server, path string, v any) int {
	t.Helper()
	req, err := http.NewRequest("GET", ts.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"), path)
	require.NoError(t, json.NewDecoder(res.Body).Decode(v), path)
	return res.StatusCode
}

// sameJSON asserts that got (a decoded answer) is want once encoded.
func sameJSON(t *testing.T, want, got any, msg string) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(w), string(g), msg)
}

func TestListConversations(t *testing.T) {
	ts, srvLog := startChatAPI(t)
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	appendAt(t, srvLog, "alpha", t0.Add(1*time.Minute), events.UserAppended{BlockID: "u1", Text: "a"})
	appendAt(t, srvLog, "alpha", t0.Add(2*time.Minute), events.UserAppended{BlockID: "u2", Text: "b"})
	appendAt(t, srvLog, "beta", t0.Add(3*time.Minute), events.UserAppended{BlockID: "u1", Text: "c"})
	appendAt(t, srvLog, "Alphabet", t0, events.UserAppended{BlockID: "u1", Text: "d"})

	tests := []struct {
		name      string
		query     string
		wantIDs   []string
		wantTotal int
	}{
		{name: "all, newest first", query: "", wantIDs: []string{"beta", "alpha", "Alphabet"}, wantTotal: 3},
		{name: "substring, any case", query: "?q=ALPHA", wantIDs: []string{"alpha", "Alphabet"}, wantTotal: 2},
		{name: "no match", query: "?q=zzz", wantIDs: []string{}, wantTotal: 0},
		{name: "limit", query: "?limit=1", wantIDs: []string{"beta"}, wantTotal: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body httpapi.ConversationsBody
			require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations"+tc.query, &body))
			ids := []string{}
			for _, c := range body.Conversations {
				ids = append(ids, c.ID)
			}
			assert.Equal(t, tc.wantIDs, ids)
			assert.Equal(t, tc.wantTotal, body.Total)
		})
	}

	var body httpapi.ConversationsBody
	getJSON(t, ts, "/conversations?q=alpha", &body)
	require.NotEmpty(t, body.Conversations)
	assert.Equal(t, httpapi.ConversationInfo{ID: "alpha", Messages: 2, UpdatedAt: t0.Add(2 * time.Minute), Events: 2, FirstMessage: "a"}, body.Conversations[0],
		"messages counts steps; updated_at is the last event's time; the first message is the first user message")

	var raw map[string]any
	getJSON(t, ts, "/conversations?q=nothing-here", &raw)
	assert.Equal(t, []any{}, raw["conversations"], "an empty list is [], not null")

	for _, bad := range []string{"0", "-1", "x", "10001"} {
		status, out, _ := call(t, ts, "GET", "/conversations?limit="+bad, "Bearer "+token, "")
		assert.Equal(t, http.StatusBadRequest, status, bad)
		assert.Contains(t, out["error"], "use a number from 1 to 10000")
	}
}

func TestTimelineRoute(t *testing.T) {
	ts, l := startChatAPI(t)
	chat(t, ts, l, "tl", "count the words in a b")

	var got map[string]any
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations/tl/timeline", &got))
	want, err := replay.Timeline(context.Background(), l, "tl")
	require.NoError(t, err)
	sameJSON(t, want, got, "the route answers replay.Timeline as JSON")
	assert.Equal(t, float64(2), got["inferences"])

	// The inference entries carry the active prompt and the input Turn.
	var tl struct {
		Events []struct {
			N         int               `json:"n"`
			Inference *replay.Inference `json:"inference"`
		} `json:"events"`
	}
	getJSON(t, ts, "/conversations/tl/timeline", &tl)
	n := 0
	for _, e := range tl.Events {
		if e.Inference == nil {
			continue
		}
		n++
		require.NotNil(t, e.Inference.SystemPrompt)
		assert.Equal(t, "You are a helpful assistant.", e.Inference.SystemPrompt.Text)
		require.NotNil(t, e.Inference.Turn)
		assert.Equal(t, e.N-1, e.Inference.Turn.Events, "the input is the Turn before the model call")
		assert.True(t, e.Inference.Verified)
	}
	assert.Equal(t, 2, n)
}

func TestTurnRoute(t *testing.T) {
	ts, l := startChatAPI(t)
	chat(t, ts, l, "tu", "hello")
	ctx := context.Background()
	latest, err := l.Load(ctx, "tu")
	require.NoError(t, err)

	tests := []struct {
		name string
		path string
		want func() any
	}{
		{name: "latest", path: "/conversations/tu/turn", want: func() any { return latest }},
		{name: "at 0 is the empty Turn", path: "/conversations/tu/turn?at=0", want: func() any { t0, _ := l.LoadAt(ctx, "tu", 0); return t0 }},
		{name: "at 2", path: "/conversations/tu/turn?at=2", want: func() any { t2, _ := l.LoadAt(ctx, "tu", 2); return t2 }},
		{name: "at the last event", path: "/conversations/tu/turn?at=" + strconv.Itoa(latest.Events), want: func() any { return latest }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			require.Equal(t, http.StatusOK, getJSON(t, ts, tc.path, &got))
			sameJSON(t, tc.want(), got, tc.path)
		})
	}

	errs := []struct {
		name       string
		path       string
		wantStatus int
		want       string
	}{
		{name: "past the end", path: "/conversations/tu/turn?at=999", wantStatus: 404, want: "the conversation has " + strconv.Itoa(latest.Events) + " events"},
		{name: "negative", path: "/conversations/tu/turn?at=-1", wantStatus: 400, want: "use an event position"},
		{name: "not a number", path: "/conversations/tu/turn?at=two", wantStatus: 400, want: "use an event position"},
		{name: "no such conversation", path: "/conversations/nobody/turn", wantStatus: 404, want: `conversation "nobody" has no events`},
		{name: "timeline of no such conversation", path: "/conversations/nobody/timeline", wantStatus: 404, want: "GET /conversations lists them"},
		{name: "ID with a dot", path: "/conversations/a.b/turn", wantStatus: 400, want: "which NATS subjects forbid"},
		{name: "ID with a wildcard", path: "/conversations/a*/timeline", wantStatus: 400, want: "which NATS subjects forbid"},
		{name: "ID with an escaped space", path: "/conversations/a%20b/turn", wantStatus: 400, want: "use letters, digits"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			status, out, _ := call(t, ts, "GET", tc.path, "Bearer "+token, "")
			assert.Equal(t, tc.wantStatus, status)
			assert.Contains(t, out["error"], tc.want)
		})
	}
}

func TestDiffRoute(t *testing.T) {
	ts, l := startChatAPI(t)
	chat(t, ts, l, "df", "hello")
	ctx := context.Background()
	turn, err := l.Load(ctx, "df")
	require.NoError(t, err)
	// Move the system prompt to the end.
	var order []string
	for _, b := range turn.Blocks[1:] {
		order = append(order, b.ID)
	}
	order = append(order, turn.Blocks[0].ID)
	n := appendAt(t, l, "df", time.Now().UTC(), events.BlocksReordered{Order: order, Reason: "test"})

	var got replay.Result
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/diff?a=df@"+strconv.Itoa(n-1)+"&b=df@"+strconv.Itoa(n), &got))
	require.Len(t, got.Changes, 1)
	assert.Equal(t, replay.OpMoved, got.Changes[0].Op)
	assert.Equal(t, turn.Blocks[0].ID, got.Changes[0].ID)
	assert.Equal(t, 0, got.Changes[0].FromIndex)
	assert.Equal(t, len(order)-1, got.Changes[0].ToIndex)

	var raw map[string]any
	getJSON(t, ts, "/diff?a=df@"+strconv.Itoa(n-1)+"&b=df", &raw)
	a, err := l.LoadAt(ctx, "df", n-1)
	require.NoError(t, err)
	b, err := l.Load(ctx, "df")
	require.NoError(t, err)
	sameJSON(t, replay.Diff(a, b), raw, "without @n, b is the latest Turn; the answer is diff-turns' JSON")

	errs := []struct {
		name       string
		query      string
		wantStatus int
		want       string
	}{
		{name: "no a", query: "?b=df@1", wantStatus: 400, want: "a: missing"},
		{name: "no b", query: "?a=df@1", wantStatus: 400, want: "b: missing"},
		{name: "bad position", query: "?a=df@x&b=df@1", wantStatus: 400, want: "after '@' comes an event position"},
		{name: "bad ID", query: "?a=d.f@1&b=df@1", wantStatus: 400, want: "which NATS subjects forbid"},
		{name: "past the end", query: "?a=df@1&b=df@999", wantStatus: 404, want: "b: load df@999"},
		{name: "no such conversation", query: "?a=df@1&b=nobody", wantStatus: 404, want: `"nobody" has no events`},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			status, out, _ := call(t, ts, "GET", "/diff"+tc.query, "Bearer "+token, "")
			assert.Equal(t, tc.wantStatus, status)
			assert.Contains(t, out["error"], tc.want)
		})
	}
}

// TestListConversationsCountsAsLs (issue 23, item 6): the console's list
// showed "Messages 9" where `turnlog ls` showed 23 events and 4 model
// calls. GET /conversations gives the same counts as ls, under ls's JSON
// names, read the same way (replay.Describe).
func TestListConversationsCountsAsLs(t *testing.T) {
	ts, l := startChatAPI(t)
	chat(t, ts, l, "counted", "count the words in a b c") // two model calls
	chat(t, ts, l, "counted", "hello")                    // one more

	want := replay.Conversation{ID: "counted"}
	require.NoError(t, replay.Describe(context.Background(), l, &want))
	require.Equal(t, 3, want.ModelCalls)

	var raw struct {
		Conversations []map[string]any `json:"conversations"`
	}
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations", &raw))
	require.Len(t, raw.Conversations, 1)
	got := raw.Conversations[0]
	assert.Equal(t, float64(want.Events), got["events"], "events as ls counts them: %v", got)
	assert.Equal(t, float64(want.ModelCalls), got["model_calls"], "model calls as ls counts them: %v", got)
	assert.Equal(t, false, got["last_request_failed"])
	assert.Equal(t, "count the words in a b c", got["first_message"], "the first message, as ls shows it")
}

// A gateway conversation whose latest call is a background response still
// running is listed open, with the response it waits for, as ls lists it.
func TestListConversationsSaysWhichBackgroundResponseWaits(t *testing.T) {
	ts, l := startChatAPI(t)
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	appendAt(t, l, "bg", t0, events.UserAppended{BlockID: "u1", Text: "a long job"})
	appendAt(t, l, "bg", t0.Add(time.Second), events.InferenceStarted{InferenceID: "call1", InputHash: "jcs:x", Blocks: 1, Gateway: map[string]string{"api": "responses"}})
	appendAt(t, l, "bg", t0.Add(2*time.Second), events.DataSet{Values: map[string]string{calls.BackgroundKey("call1"): "resp_bg"}})
	var raw struct {
		Conversations []map[string]any `json:"conversations"`
	}
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations", &raw))
	require.Len(t, raw.Conversations, 1)
	assert.Equal(t, true, raw.Conversations[0]["last_request_open"])
	assert.Equal(t, "resp_bg", raw.Conversations[0]["waiting_for"])
}
