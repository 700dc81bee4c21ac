package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestRetryOfAFailedFirstCall: an SDK retries a call the upstream failed
// with the same body and X-Stainless-Retry-Count: 1. The retry of a
// conversation's failed first call used to start a second conversation
// (the user's message in each, the chat split in two): it now continues
// the one the failed attempt started. A call that does not say it is a
// retry is another chat, as before, even with the same first message,
// and a conversation's retry entry goes when it is erased.
func TestRetryOfAFailedFirstCall(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	chat := newChatUpstream(t, "")
	// Attempts 1 and 3 fail; the others are answered.
	up := failingFirst(t, chat.Config.Handler, http.StatusInternalServerError, `{"error":{"message":"boom","type":"server_error"}}`, 1, 3)
	gw := sharedGateway(t, s, up.URL)
	body := `{"model":"m","messages":[` + weatherAsk + `]}`
	send := func(retry string) (status int, conv string) {
		t.Helper()
		h := map[string]string{"Turnlog-Token": token}
		if retry != "" {
			h["X-Stainless-Retry-Count"] = retry
		}
		resp, _ := post(t, gw.URL+"/v1/chat/completions", h, body)
		return resp.StatusCode, resp.Header.Get("Turnlog-Conversation")
	}
	ctx := context.Background()
	admin, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	users := func(conv string) (n int, threading, retries []string) {
		for e, err := range admin.Events(ctx, conv) {
			require.NoError(t, err)
			switch p := e.Payload.(type) {
			case events.UserAppended:
				n++
			case events.InferenceStarted:
				threading = append(threading, p.Gateway["threading"])
				retries = append(retries, p.Gateway["header.x-stainless-retry-count"])
			}
		}
		return n, threading, retries
	}

	status, a := send("0")
	require.Equal(t, http.StatusInternalServerError, status)
	status, retried := send("1")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, a, retried, "the retry continues the conversation its failed attempt started")
	n, threading, retries := users(a)
	assert.Equal(t, 1, n, "the user's message once")
	assert.Equal(t, []string{"new", "inferred"}, threading)
	assert.Equal(t, []string{"", "1"}, retries, "the record says which call was a retry (a first attempt's 0 is not kept)")

	status, b := send("")
	require.Equal(t, http.StatusInternalServerError, status)
	assert.NotEqual(t, a, b, "the same first call without a retry's header is another chat")
	status, c := send("")
	require.Equal(t, http.StatusOK, status)
	assert.NotEqual(t, b, c, "a call that does not say it is a retry never joins a failed one")

	got, err := admin.Erase(ctx, b)
	require.NoError(t, err)
	assert.Positive(t, got.Threading, "the failed first call's entry goes with its conversation")
	noThreadingEntryOf(t, admin, b)
	status, d := send("1")
	require.Equal(t, http.StatusOK, status)
	assert.NotEqual(t, b, d, "a retry after the erase starts a conversation of its own")
	assert.NotEqual(t, a, d, "and does not join a conversation whose first call finished")
}

// TestImportedRetryOfAFailedFirstCall: a log of calls (import --calls)
// holds an SDK's failed first attempt and its retry, whose headers say it
// is one: both are recorded in one conversation, as live calls are, the
// retry's count kept; a first attempt's count of 0 is not.
func TestImportedRetryOfAFailedFirstCall(t *testing.T) {
	r := newRig(t, "", "")
	rec, err := gateway.NewRecorder(gateway.Config{Log: r.log, Threads: calls.NewMemStore(100)})
	require.NoError(t, err)
	request := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	lines := []string{
		`{"api":"chat.completions","time":"2026-01-02T03:04:05Z","headers":{"X-Stainless-Retry-Count":"0"},"status":529,` +
			`"request":` + request + `,"response":{"error":{"message":"Overloaded","type":"overloaded_error"}}}`,
		`{"api":"chat.completions","time":"2026-01-02T03:04:06Z","headers":{"X-Stainless-Retry-Count":"1"},` +
			`"request":` + request + `,"response":{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}}`,
	}
	var convs []string
	for _, line := range lines {
		l, err := calls.ParseLogged([]byte(line))
		require.NoError(t, err)
		conv, err := rec.Record(context.Background(), l)
		require.NoError(t, err)
		convs = append(convs, conv)
	}
	assert.Equal(t, convs[0], convs[1], "the logged retry continues the failed attempt's conversation")
	started, finished, failed := inferences(t, r, convs[0])
	require.Len(t, started, 2)
	assert.Len(t, failed, 1)
	assert.Equal(t, 1, finished)
	assert.Equal(t, []string{"", "1"}, []string{started[0].Gateway["header.x-stainless-retry-count"], started[1].Gateway["header.x-stainless-retry-count"]})
	verify(t, r.log, convs[0])
}
