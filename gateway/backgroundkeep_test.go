package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// keepingGateway is one `turnlog gateway` process on s with a managed
// OpenAI key, asking about background responses every poll and keeping
// them in the installation's list: its URL, its log, that list, and what
// stops it (Run ends, its connection goes: the process dies).
func keepingGateway(t *testing.T, s *natstest.Server, upstream string, poll time.Duration) (string, *eventlog.Log, *eventlog.BackgroundResponses, func()) {
	t.Helper()
	nc, l, threads := workerLog(t, s)
	kept, err := l.BackgroundResponses(context.Background())
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: nc.IsConnected, Token: token, OpenAIUpstream: upstream + "/v1",
		Threads: threads, OpenAIKey: "sk-provider-secret", BackgroundPoll: poll, Background: kept})
	require.NoError(t, err)
	hs := httptest.NewServer(g)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	var stopped bool
	stop := func() {
		if !stopped {
			stopped = true
			hs.Close()
			cancel()
			<-done
			nc.Close()
		}
	}
	t.Cleanup(stop)
	return hs.URL, l, kept, stop
}

// listed returns the entries gateways wrote in the installation's background responses.
func listed(t *testing.T, kept *eventlog.BackgroundResponses) []eventlog.BackgroundResponse {
	t.Helper()
	var out []eventlog.BackgroundResponse
	require.NoError(t, kept.Each(t.Context(), func(r eventlog.BackgroundResponse, err error) bool {
		if err == nil {
			out = append(out, r)
		}
		return true
	}))
	return out
}

// TestBackgroundResponseOfAStoppedGatewayIsAskedAbout: the background
// responses a gateway asked the provider about (a webhook app's) were in
// its memory alone: a gateway restarted, or stopped behind a load
// balancer, forgot them, and their calls stayed open for ever. They are
// now kept in the installation's list. While the gateway that follows
// one runs, the others leave it alone; once it stops, another takes it
// up, asks with what the call asked for, records the end, and the entry
// goes.
func TestBackgroundResponseOfAStoppedGatewayIsAskedAbout(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newAskedUpstream(t)
	a, _, kept, stopA := keepingGateway(t, s, up.URL, time.Hour) // A would ask in an hour
	resp, _ := postOK(t, a+"/v1/responses", map[string]string{"Authorization": "Bearer " + token, "OpenAI-Project": "proj_research"},
		`{"model":"m","input":"a long job","background":true,"include":["reasoning.encrypted_content"]}`)
	conv := resp.Header.Get("Turnlog-Conversation")
	require.Eventually(t, func() bool { return len(listed(t, kept)) == 1 }, 10*time.Second, 10*time.Millisecond,
		"A keeps the response it follows in the installation's list")
	e := listed(t, kept)[0]
	assert.Equal(t, conv, e.Conversation)
	assert.Equal(t, "resp_wh", e.ResponseID)
	assert.Equal(t, []string{"reasoning.encrypted_content"}, e.Include)
	assert.Equal(t, []string{"proj_research"}, e.Account["Openai-Project"])
	assert.NotEmpty(t, e.Instance)

	// What another NATS client wrote into the list: B reads on past it.
	require.NoError(t, s.Conn.Publish("$KV.TURNLOG_BACKGROUND.junk", []byte("not json")))
	require.NoError(t, s.Conn.Flush())

	_, l, kept, _ := keepingGateway(t, s, up.URL, 20*time.Millisecond) // B: looks every 480 ms
	time.Sleep(1500 * time.Millisecond)                                // three of B's looks, each asking whether A runs
	assert.Empty(t, up.asked(), "A runs: B leaves its response to it")

	stopA()
	finished := waitFinished(t, l, conv, "B takes up the stopped gateway's response and records its end")
	require.Len(t, finished, 1)
	assert.Equal(t, "resp_wh", finished[0].ResponseID)
	assert.Equal(t, []string{"a long job", "the answer the webhook announced"}, blockTexts(t, l, conv))
	verify(t, l, conv)
	for _, g := range up.asked() {
		assert.Equal(t, []string{"reasoning.encrypted_content"}, g.URL.Query()["include[]"], "what the call asked to include")
		assert.Equal(t, "proj_research", g.Header.Get("OpenAI-Project"), "in the call's project")
		assert.Equal(t, "Bearer sk-provider-secret", g.Header.Get("Authorization"))
	}
	require.Eventually(t, func() bool { return len(listed(t, kept)) == 0 }, 10*time.Second, 10*time.Millisecond,
		"its end recorded, the response leaves the list")
}

// TestTakenUpResponseIsAskedAboutAtItsPace: a response taken up from a
// stopped gateway was asked about at once, as it should be, but with no
// wait after: its doubling wait started at zero, and a response still
// running was asked about again and again (34,044 asks in two seconds in
// review), with the managed key, for up to a day. It is asked again
// after the poll's wait, doubling, as any other.
func TestTakenUpResponseIsAskedAboutAtItsPace(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	var gets atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			gets.Add(1)
			io.WriteString(w, `{"id":"resp_wh","object":"response","created_at":1,"status":"in_progress","background":true,"model":"m","output":[],"usage":null}`)
			return
		}
		io.WriteString(w, `{"id":"resp_wh","object":"response","created_at":1,"status":"queued","background":true,"model":"m","output":[],"usage":null}`)
	}))
	t.Cleanup(up.Close)
	a, _, kept, stopA := keepingGateway(t, s, up.URL, time.Hour)
	postOK(t, a+"/v1/responses", map[string]string{"Authorization": "Bearer " + token}, `{"model":"m","input":"a long job","background":true}`)
	require.Eventually(t, func() bool { return len(listed(t, kept)) == 1 }, 10*time.Second, 10*time.Millisecond)
	stopA()
	keepingGateway(t, s, up.URL, 500*time.Millisecond) // B takes it up when it starts
	require.Eventually(t, func() bool { return gets.Load() > 0 }, 10*time.Second, 10*time.Millisecond, "B asks at once")
	time.Sleep(2 * time.Second) // asks at once, then 1 s and 2 s later
	assert.LessOrEqual(t, gets.Load(), int64(3), "asked at the poll's pace, not again and again")
}
