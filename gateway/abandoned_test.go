package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/replay"
)

// holdingUpstream answers every chat call at once ("noted") but the first
// whose body holds marker, which waits until release is closed.
func holdingUpstream(t *testing.T, marker string) (up *httptest.Server, reached, release chan struct{}) {
	reached, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		held := false
		if bytes.Contains(body, []byte(marker)) {
			once.Do(func() { held = true })
		}
		if held {
			close(reached)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer("noted"))
	}))
	t.Cleanup(up.Close)
	return up, reached, release
}

// tryPost posts a chat call and returns its status, 0 when the response
// did not arrive whole (the gateway could not record it and cut it).
func tryPost(gw, body string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, gw+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Turnlog-Token", token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return 0, resp.Header.Get("Turnlog-Conversation")
	}
	return resp.StatusCode, resp.Header.Get("Turnlog-Conversation")
}

// callStatuses are the statuses of conv's model calls, as the calls view
// gives them, and the error of each failed one.
func callStatuses(t *testing.T, l *eventlog.Log, conv string) (statuses, errs []string) {
	t.Helper()
	page, err := replay.Calls(t.Context(), l, conv, replay.Page{})
	require.NoError(t, err)
	for _, c := range page.Calls {
		statuses = append(statuses, string(c.Status))
		errs = append(errs, c.Error)
	}
	return statuses, errs
}

const (
	abandonFirst  = `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"one"}]}`
	abandonSecond = `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"one"},{"role":"assistant","content":"noted"},{"role":"user","content":"two"}]}`
)

// workerLog is what a `turnlog gateway` process opens on s: its own NATS
// connection as the worker role, its log, the installation's threading
// index.
func workerLog(t *testing.T, s *natstest.Server) (*nats.Conn, *eventlog.Log, *eventlog.Threads) {
	t.Helper()
	nc := s.ConnectAs(t, natsauth.Worker)
	l, err := eventlog.Open(context.Background(), nc, eventlog.WithWriterRole(string(natsauth.Worker)))
	require.NoError(t, err)
	threads, err := l.Threads(context.Background())
	require.NoError(t, err)
	return nc, l, threads
}

// workerGateway is one `turnlog gateway` process on s, on its own NATS
// connection as the worker role: its URL, its log, what kills its
// connection (the process dying), and its metrics.
func workerGateway(t *testing.T, s *natstest.Server, upstream string) (*httptest.Server, *eventlog.Log, func(), *gateway.Metrics) {
	t.Helper()
	nc, l, threads := workerLog(t, s)
	m := gateway.NewMetrics()
	g, err := gateway.New(gateway.Config{Log: l, Connected: nc.IsConnected, Token: token, OpenAIUpstream: upstream + "/v1", Threads: threads, Metrics: m})
	require.NoError(t, err)
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	return hs, l, nc.Close, m
}

// TestCallOfAStoppedGatewayIsClosedAsAbandoned: a gateway that stops (its
// process killed, its NATS connection gone) between a call's input and
// its outcome leaves the call open in the log. When the app retries
// through another gateway, that gateway asks whether the first still
// runs, finds it gone, and closes the call as failed, saying why; the
// retry is recorded after it.
func TestCallOfAStoppedGatewayIsClosedAsAbandoned(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up, reached, release := holdingUpstream(t, `"two"`)
	a, _, stopA, _ := workerGateway(t, s, up.URL)
	b, l, _, mb := workerGateway(t, s, up.URL)

	status, conv := tryPost(a.URL, abandonFirst)
	require.Equal(t, 200, status)
	done := make(chan int, 1)
	go func() { status, _ := tryPost(a.URL, abandonSecond); done <- status }()
	<-reached
	require.Eventually(t, func() bool { st, _ := callStatuses(t, l, conv); return len(st) == 2 }, 10*time.Second, 10*time.Millisecond,
		"the second call's input is recorded while the upstream works")
	stopA() // gateway A's process dies: its connection goes
	close(release)
	assert.NotEqual(t, 200, <-done, "the app does not get an answer the log does not hold")
	st, _ := callStatuses(t, l, conv)
	assert.Equal(t, []string{"finished", "open"}, st, "the stopped gateway's call is open")

	// The app retries, through gateway B.
	status, again := tryPost(b.URL, abandonSecond)
	require.Equal(t, 200, status)
	assert.Equal(t, conv, again, "the retry continues the conversation")
	st, errs := callStatuses(t, l, conv)
	assert.Equal(t, []string{"finished", "failed", "finished"}, st)
	assert.Contains(t, errs[1], "stopped before it recorded the answer")
	page, err := replay.Calls(t.Context(), l, conv, replay.Page{})
	require.NoError(t, err)
	assert.Nil(t, page.Calls[1].LatencyMS, "its latency unknown: the time until the retry closed it is the outage's")
	assert.Contains(t, scrape(t, mb), `turnlog_gateway_calls_total{api="chat.completions",outcome="abandoned"} 1`)
	var started, closing []string // replay's summaries
	for _, e := range conversationEvents(t, l, conv) {
		switch e.Payload.(type) {
		case events.InferenceStarted:
			started = append(started, e.Cause)
		case events.InferenceFailed:
			closing = append(closing, replay.Summary(e))
		}
	}
	require.Len(t, closing, 1)
	assert.Contains(t, closing[0], "call "+started[1]+" failed", "replay names the call it closes, not the retry")
	verify(t, l, conv)
	assert.Empty(t, checkRules(t, l, conv))
}

// TestCallOfARunningGatewayStaysOpen: while gateway A waits for the
// upstream, gateway B records a call of the same conversation (parallel
// sub-agents behind a load balancer), finds A's call open, asks, and A
// answers that it runs (as the worker role may): the call is left to A,
// which records its outcome when the upstream answers.
func TestCallOfARunningGatewayStaysOpen(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up, reached, release := holdingUpstream(t, `"two"`)
	a, _, _, _ := workerGateway(t, s, up.URL)
	b, l, _, mb := workerGateway(t, s, up.URL)
	named := func(gw, body string) {
		t.Helper()
		postOK(t, gw+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "agents"}, body)
	}
	named(a.URL, abandonFirst)
	done := make(chan struct{})
	go func() { defer close(done); named(a.URL, abandonSecond) }()
	<-reached
	require.Eventually(t, func() bool { st, _ := callStatuses(t, l, "agents"); return len(st) == 2 }, 10*time.Second, 10*time.Millisecond)
	named(b.URL, `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"one"},{"role":"assistant","content":"noted"},{"role":"user","content":"three"}]}`)
	st, _ := callStatuses(t, l, "agents")
	assert.Equal(t, []string{"finished", "open", "finished"}, st, "A's call is A's to finish")
	assert.Contains(t, scrape(t, mb), `turnlog_gateway_calls_total{api="chat.completions",outcome="finished"} 1`)
	assert.NotContains(t, scrape(t, mb), `outcome="abandoned"`)
	close(release)
	<-done
	st, _ = callStatuses(t, l, "agents")
	assert.Equal(t, []string{"finished", "finished", "finished"}, st)
}

// failSecondOutcome is the log refusing the second call's outcome (as a
// NATS server that went away for a moment does): the call's input is
// stored, its outcome is not.
type failSecondOutcome struct {
	*eventlog.Log
	mu       sync.Mutex
	outcomes int
}

func (f *failSecondOutcome) Append(ctx context.Context, conv string, seq uint64, evs ...events.Event) (uint64, error) {
	for _, e := range evs {
		if _, ok := e.Payload.(events.InferenceFinished); ok {
			f.mu.Lock()
			f.outcomes++
			n := f.outcomes
			f.mu.Unlock()
			if n == 2 {
				return 0, fmt.Errorf("nats: connection closed (in the test)")
			}
		}
	}
	return f.Log.Append(ctx, conv, seq, evs...)
}

// TestOwnUnfinishedCallIsClosedByTheRetry: a gateway whose log refused a
// call's outcome cuts the app's response, and the app retries; the
// gateway closes the first attempt as abandoned when the retry comes, it
// being no longer in flight.
func TestOwnUnfinishedCallIsClosedByTheRetry(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("noted"))
	m := gateway.NewMetrics()
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		c.Log, c.Metrics = &failSecondOutcome{Log: c.Log.(*eventlog.Log)}, m
	})
	status, conv := tryPost(r.gw.URL, abandonFirst)
	require.Equal(t, 200, status)
	status, _ = tryPost(r.gw.URL, abandonSecond)
	assert.Equal(t, 0, status, "the response is cut: its outcome is not in the log")
	st, _ := callStatuses(t, r.log, conv)
	require.Equal(t, []string{"finished", "open"}, st)
	listed := replay.Conversation{ID: conv}
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.True(t, listed.LastRequestOpen, "turnlog ls says the last call has no outcome (it said ok)")
	assert.False(t, listed.LastRequestFailed)

	status, again := tryPost(r.gw.URL, abandonSecond)
	require.Equal(t, 200, status)
	assert.Equal(t, conv, again)
	st, errs := callStatuses(t, r.log, conv)
	assert.Equal(t, []string{"finished", "failed", "finished"}, st)
	assert.Contains(t, errs[1], "this gateway could not record the call's answer")
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.False(t, listed.LastRequestOpen, "the retry finished")
	assert.Contains(t, scrape(t, m), `turnlog_gateway_calls_total{api="chat.completions",outcome="abandoned"} 1`)
	verify(t, r.log, conv)
	assert.Empty(t, checkRules(t, r.log, conv))
}
