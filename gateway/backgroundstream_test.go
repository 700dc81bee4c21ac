package gateway_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// streamedFetchUpstream is a stand-in of the Responses API's background
// mode where the app streams the answer: a call with background: true is
// answered "queued" (resp_bs), and GET /v1/responses/resp_bs?stream=true
// streams the response's events from the start (or after starting_after),
// ending with response.completed, which holds the whole response. sent
// returns the SHA-256 of each stream's bytes as the stand-in wrote them.
// With hold set, a stream waits for it before its final event.
func streamedFetchUpstream(t *testing.T, hold <-chan struct{}) (up *httptest.Server, sent func() []string) {
	var (
		mu     sync.Mutex
		hashes []string
	)
	completed := `{"id":"resp_bs","object":"response","created_at":1,"completed_at":31,"status":"completed","background":true,"model":"m","output":[{"type":"message","id":"msg_bs","status":"completed","role":"assistant","content":[{"type":"output_text","text":"the streamed answer","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`
	stream := []string{
		`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_bs","object":"response","created_at":1,"status":"in_progress","background":true,"model":"m","output":[]}}`,
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"message","id":"msg_bs","status":"in_progress","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_bs","output_index":0,"content_index":0,"delta":"the streamed "}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_bs","output_index":0,"content_index":0,"delta":"answer"}`,
		`{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":{"type":"message","id":"msg_bs","status":"completed","role":"assistant","content":[{"type":"output_text","text":"the streamed answer","annotations":[]}]}}`,
		`{"type":"response.completed","sequence_number":6,"response":` + completed + `}`,
	}
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"resp_bs","object":"response","created_at":1,"status":"queued","background":true,"model":"m","output":[],"usage":null}`)
			return
		}
		if r.URL.Query().Get("stream") != "true" || !strings.HasPrefix(r.URL.Path, "/v1/responses/") {
			http.NotFound(w, r)
			return
		}
		after := 0
		fmt.Sscan(r.URL.Query().Get("starting_after"), &after)
		w.Header().Set("Content-Type", "text/event-stream")
		h := sha256.New()
		rest := stream[min(after, len(stream)):]
		for i, data := range rest {
			if hold != nil && i == len(rest)-1 {
				w.(http.Flusher).Flush()
				<-hold
			}
			typ := strings.Split(strings.Split(data, `"type":"`)[1], `"`)[0]
			ev := fmt.Sprintf("event: %s\ndata: %s\n\n", typ, strings.ReplaceAll(data, "resp_bs", strings.TrimPrefix(r.URL.Path, "/v1/responses/")))
			io.WriteString(w, ev)
			h.Write([]byte(ev))
			if i%2 == 0 {
				w.(http.Flusher).Flush()
			}
		}
		mu.Lock()
		hashes = append(hashes, fmt.Sprintf("%x", h.Sum(nil)))
		mu.Unlock()
	}))
	t.Cleanup(up.Close)
	return up, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), hashes...)
	}
}

// TestStreamedFetchOfABackgroundResponseIsRecorded: an app that made a
// background call and then streamed its answer (GET
// /v1/responses/{id}?stream=true, which the openai SDKs offer as
// responses.retrieve with stream) left the call open for ever: the
// streamed fetch passed through unrecorded. Its final event, which holds
// the whole response, is now recorded as the call's outcome before it
// reaches the app; the stream's bytes pass unchanged; a second fetch
// records nothing more, and a stream of a response no recorded call waits
// for passes through as before.
func TestStreamedFetchOfABackgroundResponseIsRecorded(t *testing.T) {
	up, sent := streamedFetchUpstream(t, nil)
	r := newRig(t, up.URL, "")
	resp, _ := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, `{"model":"m","input":"a long job","background":true}`)
	conv := resp.Header.Get("Turnlog-Conversation")
	require.NotEmpty(t, conv)

	fetch := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, b := tokenRequest(t, http.MethodGet, r.gw.URL+path)
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		return resp, b
	}
	resp, body := fetch("/v1/responses/resp_bs?stream=true&starting_after=1")
	assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "the stream says whose call it ends")
	assert.Equal(t, sent(), []string{fmt.Sprintf("%x", sha256.Sum256(body))}, "the stream's bytes as the provider sent them")

	// Read at once: the outcome is stored before the final event is passed on.
	var finished []events.InferenceFinished
	for _, e := range conversationEvents(t, r.log, conv) {
		if p, ok := e.Payload.(events.InferenceFinished); ok {
			finished = append(finished, p)
		}
	}
	require.Len(t, finished, 1, "the streamed end is the call's outcome")
	assert.Equal(t, "resp_bs", finished[0].ResponseID)
	assert.Equal(t, []string{"a long job", "the streamed answer"}, blockTexts(t, r.log, conv))
	listed := replay.Conversation{ID: conv}
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.False(t, listed.LastRequestOpen, "ls no longer says the call is open")
	verify(t, r.log, conv)
	assert.Empty(t, checkRules(t, r.log, conv))

	n := len(conversationEvents(t, r.log, conv))
	fetch("/v1/responses/resp_bs?stream=true")
	assert.Len(t, conversationEvents(t, r.log, conv), n, "streamed again: recorded once")

	resp, body = fetch("/v1/responses/resp_elsewhere?stream=true")
	assert.Empty(t, resp.Header.Get("Turnlog-Conversation"), "no recorded call waits for it")
	assert.Contains(t, string(body), "response.completed", "passed through whole")
}

// refuseOutcomes is a log that refuses the steps holding a model call's
// outcome while refuse is set (a NATS server gone for a moment).
type refuseOutcomes struct {
	*eventlog.Log
	refuse atomic.Bool
}

func (f *refuseOutcomes) Append(ctx context.Context, conv string, seq uint64, evs ...events.Event) (uint64, error) {
	for _, e := range evs {
		if _, ok := e.Payload.(events.InferenceFinished); ok && f.refuse.Load() {
			return 0, errors.New("nats: connection closed (in the test)")
		}
	}
	return f.Log.Append(ctx, conv, seq, evs...)
}

// TestStreamedFetchWhoseEndIsNotRecordedIsCut: when the log cannot take a
// streamed background response's end, the app does not get that end (the
// stream is cut before its final event), and the call stays open; the
// app's next fetch, the log back, records it.
func TestStreamedFetchWhoseEndIsNotRecordedIsCut(t *testing.T) {
	hold := make(chan struct{})
	up, _ := streamedFetchUpstream(t, hold)
	var l *refuseOutcomes
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		l = &refuseOutcomes{Log: c.Log.(*eventlog.Log)}
		c.Log = l
	})
	resp, _ := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, `{"model":"m","input":"a long job","background":true}`)
	conv := resp.Header.Get("Turnlog-Conversation")

	l.refuse.Store(true)
	req, err := http.NewRequest(http.MethodGet, r.gw.URL+"/v1/responses/resp_bs?stream=true", nil)
	require.NoError(t, err)
	req.Header.Set("Turnlog-Token", token)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	// What came before the end passes as it comes.
	before := make([]byte, 0, 4096)
	for !strings.Contains(string(before), "response.output_item.done") {
		buf := make([]byte, 4096)
		n, err := resp.Body.Read(buf)
		require.NoError(t, err, "read so far: %s", before)
		before = append(before, buf[:n]...)
	}
	close(hold)
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err, "the stream is cut")
	assert.NotContains(t, string(rest), "response.completed", "the end the log does not hold did not pass")
	listed := replay.Conversation{ID: conv}
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.True(t, listed.LastRequestOpen, "the call is still open")

	l.refuse.Store(false) // hold is closed: the stand-in no longer waits
	_, body := tokenRequest(t, http.MethodGet, r.gw.URL+"/v1/responses/resp_bs?stream=true")
	assert.Contains(t, string(body), "response.completed")
	assert.Equal(t, []string{"a long job", "the streamed answer"}, blockTexts(t, r.log, conv))
	verify(t, r.log, conv)
}

// TestOpenAISDKStreamsABackgroundResponse: the official openai npm
// package makes a background call and streams its answer
// (responses.retrieve with stream: true) through the gateway; the stream
// reaches it byte for byte, and the call is recorded finished.
func TestOpenAISDKStreamsABackgroundResponse(t *testing.T) {
	up, sent := streamedFetchUpstream(t, nil)
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.OpenAIKey = "sk-provider-secret" })
	res := runSDK(t, "responses_background_stream.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	assert.Equal(t, []string{"queued", "the streamed answer", "the streamed answer"}, res.Texts)
	require.Len(t, res.Received, 2)
	assert.Equal(t, sent(), res.Received[1:], "the stream as the provider sent it")
	conv := res.Conversations[0]
	assert.Equal(t, []string{conv, conv}, res.Conversations)
	assert.Equal(t, []string{"a long job", "the streamed answer"}, blockTexts(t, r.log, conv))
	verify(t, r.log, conv)
	assert.Empty(t, checkRules(t, r.log, conv))
}

// TestStreamedFetchIsRefusedWhenTheIndexCannotBeRead: gateways that share
// the threading index look a streamed response up there; when the look-up
// failed, the stream passed whole, its end unrecorded, so the app got an
// end the log does not hold. It is now answered 503, nothing forwarded,
// as a fetch whose end cannot be recorded is.
func TestStreamedFetchIsRefusedWhenTheIndexCannotBeRead(t *testing.T) {
	up, sent := streamedFetchUpstream(t, nil)
	srv := natstest.Start(t)
	l, err := eventlog.Open(t.Context(), srv.Conn)
	require.NoError(t, err)
	idx, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	il, err := eventlog.Open(t.Context(), idx)
	require.NoError(t, err)
	threads, err := il.Threads(t.Context())
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: srv.Conn.IsConnected, Token: token, OpenAIUpstream: up.URL + "/v1", Threads: threads})
	require.NoError(t, err)
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	resp, _ := postOK(t, gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, `{"model":"m","input":"a long job","background":true}`)
	conv := resp.Header.Get("Turnlog-Conversation")

	idx.Close() // the index can no longer be read; the log still can
	resp, body := tokenRequest(t, http.MethodGet, gw.URL+"/v1/responses/resp_bs?stream=true")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "threading index")
	assert.Empty(t, sent(), "nothing forwarded")
	listed := replay.Conversation{ID: conv}
	require.NoError(t, replay.Describe(t.Context(), l, &listed))
	assert.True(t, listed.LastRequestOpen, "the call waits for a later fetch")
}
