package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/replay"
)

func TestCallWireOfAWorkersCall(t *testing.T) {
	ts, l := startChatAPI(t)
	const conv = "wire-1"
	chat(t, ts, l, conv, "count the words in one two three") // calls 1 and 2
	page := callsOf(t, ts, "/conversations/"+conv+"/calls", "")
	require.Len(t, page.Calls, 2)

	var w httpapi.WireBody
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations/"+conv+"/calls/2/wire", &w))
	assert.Equal(t, 2, w.Call)
	assert.Equal(t, page.Calls[1].N, w.N)
	assert.Equal(t, "scripted/1", w.Rendering)
	assert.Equal(t, "turnlog.scripted", page.Calls[1].Provider)
	sum := sha256.Sum256([]byte(w.Body))
	assert.Equal(t, hex.EncodeToString(sum[:]), w.SHA256, "sha256 is of the body as given")
	assert.Equal(t, page.Calls[1].WireSHA256, w.Recorded, "recorded is the call's wire_sha256")
	assert.Equal(t, w.Recorded, w.SHA256)
	assert.True(t, w.Verified)
	assert.True(t, json.Valid([]byte(w.Body)))
	assert.Contains(t, w.Body, "count the words in one two three")
	assert.Contains(t, w.Body, "word_count", "the second call's request carries the tool call")

	for _, tc := range []struct {
		name, path string
		status     int
		says       string
	}{
		{"no such call", "/conversations/" + conv + "/calls/3/wire", http.StatusNotFound, "has 2 model calls"},
		{"not a number", "/conversations/" + conv + "/calls/two/wire", http.StatusBadRequest, "model call number"},
		{"no such conversation", "/conversations/nobody/calls/1/wire", http.StatusNotFound, "has no events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := call(t, ts, "GET", tc.path, "Bearer "+token, "")
			assert.Equal(t, tc.status, status)
			assert.Contains(t, body["error"], tc.says)
		})
	}
	_, body, _ := call(t, ts, "GET", "/conversations/"+conv+"/calls/3/wire", "Bearer "+token, "")
	assert.Contains(t, body["error"], "/conversations/"+conv+"/calls lists them", "a call number comes from the calls view")
	assert.NotContains(t, body["error"], "timeline", "not an event position")
	status, _, _ := call(t, ts, "GET", "/conversations/"+conv+"/calls/1/wire", "", "")
	assert.Equal(t, http.StatusUnauthorized, status, "the token is needed")

	// A server without the engines' renderer says so, instead of guessing.
	api, err := httpapi.New(httpapi.Config{Log: l, Token: token, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	bare := httptest.NewServer(api)
	t.Cleanup(bare.Close)
	status, body, _ = call(t, bare, "GET", "/conversations/"+conv+"/calls/1/wire", "Bearer "+token, "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body["error"], "renders no engine's requests")
}

// A call the recording gateway recorded (here as import --calls records
// one, through package calls): its request in the canonical form its
// input hash is of.
func TestCallWireOfAGatewayCall(t *testing.T) {
	ts, l := startChatAPI(t)
	const conv = "wire-gw"
	reqBody := `{"model": "gpt-test", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}], "temperature": 0.5}`
	respBody := `{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}}`
	recordGatewayCall(t, l, conv, reqBody, respBody)

	page := callsOf(t, ts, "/conversations/"+conv+"/calls", "")
	require.Len(t, page.Calls, 1)
	c := page.Calls[0]
	assert.Equal(t, "openai", c.Provider)
	assert.Equal(t, calls.ThreadNew, c.Threading)
	wireSum := sha256.Sum256([]byte(reqBody))
	assert.Equal(t, hex.EncodeToString(wireSum[:]), c.WireSHA256, "wire_sha256 is of the client's bytes")
	assert.True(t, c.Verified)
	assert.Equal(t, replay.CallFinished, c.Status)
	require.NotNil(t, c.Usage)
	assert.Equal(t, replay.Usage{InputTokens: 7, OutputTokens: 1}, *c.Usage)
	require.Len(t, c.Output, 1)
	assert.Equal(t, "hi", c.Output[0].Text)

	var w httpapi.WireBody
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations/"+conv+"/calls/1/wire", &w))
	assert.Equal(t, "canonical chat.completions", w.Rendering)
	assert.Equal(t, c.InputHash, w.Recorded)
	assert.True(t, w.Verified, "the canonical request hashes to the recorded input hash")
	var got, sent any
	require.NoError(t, json.Unmarshal([]byte(w.Body), &got))
	require.NoError(t, json.Unmarshal([]byte(reqBody), &sent))
	assert.Equal(t, sent, got, "the same request as the client sent, in canonical form")
}

// recordGatewayCall records one call as the gateway and import --calls do.
func recordGatewayCall(t *testing.T, l *eventlog.Log, conv, reqBody, respBody string) {
	t.Helper()
	ctx := context.Background()
	req, err := calls.ParseRequest(calls.ChatCompletions, []byte(reqBody))
	require.NoError(t, err)
	out, err := calls.ParseResponse(calls.ChatCompletions, []byte(respBody))
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(reqBody))
	c := &calls.Call{Request: req, Wire: hex.EncodeToString(sum[:]), Threading: calls.ThreadNew}
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	evs, err := calls.PlanInput(turn, c)
	require.NoError(t, err)
	seq, err := l.Append(ctx, conv, turn.Seq, evs...)
	require.NoError(t, err)
	turn.Seq = seq
	evs, err = calls.PlanOutcome(turn, c, calls.Outcome{Output: out, Duration: 1000})
	require.NoError(t, err)
	_, err = l.Append(ctx, conv, turn.Seq, evs...)
	require.NoError(t, err)
}
