package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// TestBackgroundResponseIsNotAFinishedCall: a Responses call made with
// background: true is answered "queued" with no output; the output is
// fetched later from the provider (GET /v1/responses/{id}), which passes
// through unrecorded. It was recorded as a finished call with no output,
// and --verify, --check and ls said all was well. It is recorded as a call
// whose output the record does not hold, saying why; the app's next call,
// continuing it by its ID, stays in the conversation.
func TestBackgroundResponseIsNotAFinishedCall(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Background bool `json:"background"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		w.Header().Set("Content-Type", "application/json")
		if body.Background {
			io.WriteString(w, `{"id":"resp_bg","object":"response","created_at":1,"status":"queued","background":true,"model":"m","output":[],"usage":null}`)
			return
		}
		fmt.Fprint(w, `{"id":"resp_2","object":"response","created_at":2,"status":"completed","model":"m","output":[{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	resp, out := post(t, r.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, `{"model":"m","input":"a long job","background":true}`)
	require.Equal(t, 200, resp.StatusCode, "%s", out)
	conv := resp.Header.Get("Turnlog-Conversation")

	var failed []events.InferenceFailed
	finished := 0
	for _, e := range conversationEvents(t, r.log, conv) {
		switch p := e.Payload.(type) {
		case events.InferenceFailed:
			failed = append(failed, p)
		case events.InferenceFinished:
			finished++
		}
	}
	assert.Zero(t, finished, "not a finished call")
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0].Error, "background response resp_bg is queued")
	assert.Contains(t, failed[0].Error, "the record holds no output of this call")
	listed := replay.Conversation{ID: conv}
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.True(t, listed.LastRequestFailed, "ls does not say ok")

	resp, out = post(t, r.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, `{"model":"m","input":"next","previous_response_id":"resp_bg"}`)
	require.Equal(t, 200, resp.StatusCode, "%s", out)
	assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "the next call continues it by its ID")
	verify(t, r.log, conv)
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
	resp, out := post(t, gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, `{"model":"m","input":"a long job","background":true}`)
	require.Equal(t, 200, resp.StatusCode, "%s", out)
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
