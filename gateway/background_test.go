package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// backgroundUpstream is a stand-in of the Responses API's background
// mode: a call with background: true is answered "queued" (resp_bg);
// GET /v1/responses/resp_bg answers "in_progress" the first time, then
// the completed response; POST /v1/responses/{id}/cancel cancels one; a
// call continuing it is answered at once.
func backgroundUpstream(t *testing.T) *httptest.Server {
	var polls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Background bool `json:"background"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/responses/resp_bg":
			if polls.Add(1) == 1 {
				io.WriteString(w, `{"id":"resp_bg","object":"response","created_at":1,"status":"in_progress","background":true,"model":"m","output":[],"usage":null}`)
				return
			}
			io.WriteString(w, `{"id":"resp_bg","object":"response","created_at":1,"completed_at":43,"status":"completed","background":true,"model":"m","output":[{"type":"message","id":"msg_bg","status":"completed","role":"assistant","content":[{"type":"output_text","text":"the long answer","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
			id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/responses/"), "/cancel")
			fmt.Fprintf(w, `{"id":%q,"object":"response","created_at":1,"status":"cancelled","background":true,"model":"m","output":[],"usage":null}`, id)
		case body.Background:
			fmt.Fprintf(w, `{"id":"resp_%s","object":"response","created_at":1,"status":"queued","background":true,"model":"m","output":[],"usage":null}`,
				map[bool]string{true: "bg", false: "bg2"}[!strings.Contains(string(b), "second job")])
		default:
			io.WriteString(w, `{"id":"resp_2","object":"response","created_at":2,"status":"completed","model":"m","output":[{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestBackgroundResponseIsRecordedWhenFetched: a Responses call made with
// background: true is answered "queued" with no output; the app fetches
// the output later (GET /v1/responses/{id}). The fetch passed through
// unrecorded, and the call was recorded failed, "the record holds no
// output of this call": a deep-research app's answers were never in the
// record. The call now stays open until a fetch through the gateway
// brings its end, which is recorded as its outcome before the app gets
// it; a fetch of a response still running, or fetched before, records
// nothing; a cancelled one is recorded failed, saying so.
func TestBackgroundResponseIsRecordedWhenFetched(t *testing.T) {
	up := backgroundUpstream(t)
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		// The installation's threading index, which erase clears.
		threads, err := c.Log.(*eventlog.Log).Threads(context.Background())
		require.NoError(t, err)
		c.Threads = threads
	})
	hdr := map[string]string{"Turnlog-Token": token}
	resp, _ := postOK(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","input":"a long job","background":true}`)
	conv := resp.Header.Get("Turnlog-Conversation")
	outcomes := func(conv string) (finished []events.InferenceFinished, failed []events.InferenceFailed) {
		for _, e := range conversationEvents(t, r.log, conv) {
			switch p := e.Payload.(type) {
			case events.InferenceFailed:
				failed = append(failed, p)
			case events.InferenceFinished:
				finished = append(finished, p)
			}
		}
		return finished, failed
	}
	finished, failed := outcomes(conv)
	assert.Empty(t, finished)
	assert.Empty(t, failed, "queued: the call is open, not failed")
	listed := replay.Conversation{ID: conv}
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.True(t, listed.LastRequestOpen, "ls says the call is open")
	assert.Equal(t, "resp_bg", listed.WaitingFor, "and which response it waits for")

	fetch := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		resp, b := tokenRequest(t, method, r.gw.URL+path)
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		return resp, b
	}
	fetch(http.MethodGet, "/v1/responses/resp_bg") // in progress
	finished, _ = outcomes(conv)
	assert.Empty(t, finished, "still running: nothing recorded")
	resp, body := fetch(http.MethodGet, "/v1/responses/resp_bg")
	assert.Contains(t, string(body), "the long answer", "the provider's answer, as it came")
	assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"))
	finished, failed = outcomes(conv)
	require.Len(t, finished, 1)
	assert.Empty(t, failed)
	assert.Equal(t, "resp_bg", finished[0].ResponseID)
	assert.Equal(t, 42*time.Second, finished[0].Duration, "the provider's own account: completed_at - created_at")
	assert.Equal(t, []string{"a long job", "the long answer"}, blockTexts(t, r.log, conv))
	listed = replay.Conversation{ID: conv}
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.False(t, listed.LastRequestOpen)
	assert.Empty(t, listed.WaitingFor)
	events1 := len(conversationEvents(t, r.log, conv))
	fetch(http.MethodGet, "/v1/responses/resp_bg")
	assert.Len(t, conversationEvents(t, r.log, conv), events1, "fetched again: recorded once")

	resp, _ = postOK(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","input":"next","previous_response_id":"resp_bg"}`)
	assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "the next call continues it by its ID")
	verify(t, r.log, conv)
	assert.Empty(t, checkRules(t, r.log, conv))
	threads, err := r.log.Threads(t.Context())
	require.NoError(t, err)
	item := "o." + fmt.Sprintf("%x", sha256.Sum256([]byte("msg_bg")))
	_, found, err := threads.Get(t.Context(), item)
	require.NoError(t, err)
	require.True(t, found, "the fetched answer's item is indexed for item references")

	// Cancelled: recorded failed, saying so.
	resp, _ = postOK(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","input":"a second job","background":true}`)
	second := resp.Header.Get("Turnlog-Conversation")
	fetch(http.MethodPost, "/v1/responses/resp_bg2/cancel")
	_, failed = outcomes(second)
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0].Error, "background response resp_bg2 ended without an answer: response cancelled")
	verify(t, r.log, second)

	// Erasing the first conversation removes its fetched answer's entries.
	_, err = r.log.Erase(t.Context(), conv)
	require.NoError(t, err)
	_, found, err = threads.Get(t.Context(), item)
	require.NoError(t, err)
	assert.False(t, found, "erased with its conversation")
}

// TestEraseRemovesABackgroundCallsResponseEntry: a background call's
// response ID is indexed (its app continues it by previous_response_id),
// but erase found the entries to remove from the finished calls' response
// IDs alone, so the erased conversation's ID stayed in the threading index
// under the background response's hash.
func TestEraseRemovesABackgroundCallsResponseEntry(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_bg","object":"response","created_at":1,"status":"queued","background":true,"model":"m","output":[],"usage":null}`)
	}))
	t.Cleanup(up.Close)
	gw := sharedGateway(t, s, up.URL)
	resp, _ := postOK(t, gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, `{"model":"m","input":"a long job","background":true}`)
	conv := resp.Header.Get("Turnlog-Conversation")

	ctx := context.Background()
	admin, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	threads, err := admin.Threads(ctx)
	require.NoError(t, err)
	key := "r." + fmt.Sprintf("%x", sha256.Sum256([]byte("resp_bg")))
	_, found, err := threads.Get(ctx, key)
	require.NoError(t, err)
	require.True(t, found, "the background response is indexed")
	_, err = admin.Erase(ctx, conv)
	require.NoError(t, err)
	_, found, err = threads.Get(ctx, key)
	require.NoError(t, err)
	assert.False(t, found, "erased with its conversation")
}

// TestBackgroundFetchLargerThanTheLimitIsNotCut: a fetched response larger
// than --max-body was passed on cut at the limit, as if whole (its
// Content-Length the cut's); it is answered 502 saying why.
func TestBackgroundFetchLargerThanTheLimitIsNotCut(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_big","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_big","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}]}`,
			strings.Repeat("x", 4096))
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.MaxBody = 1024 })
	resp, body := tokenRequest(t, http.MethodGet, r.gw.URL+"/v1/responses/resp_big")
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "larger than this gateway's limit")
}

// tokenRequest sends a request without a body, with turnlog's token, and
// returns the answer and its body.
func tokenRequest(t *testing.T, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	req.Header.Set("Turnlog-Token", token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}
