package gateway_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestUnrecordedOutcomeIsClosedWhenTheRetryGoesElsewhere: gateway A's log
// refuses a call's outcome (NATS lost mid-call), so A cuts the response;
// the app's retry reaches gateway B behind the load balancer. B finds the
// call open, asks, and A still runs, so B leaves it to A. A closes it
// itself, as failed, once its log takes appends again: no call stays open
// in the log for ever because its retry went to another gateway.
func TestUnrecordedOutcomeIsClosedWhenTheRetryGoesElsewhere(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newFixedUpstream(t, chatAnswer("noted"))
	nc, l, threads := workerLog(t, s)
	ma := gateway.NewMetrics()
	ga, err := gateway.New(gateway.Config{Log: &failSecondOutcome{Log: l}, Connected: nc.IsConnected, Token: token,
		OpenAIUpstream: up.URL + "/v1", Threads: threads, Metrics: ma})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); ga.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	a := httptest.NewServer(ga)
	t.Cleanup(a.Close)
	b, lb, _, _ := workerGateway(t, s, up.URL)

	status, conv := tryPost(a.URL, abandonFirst)
	require.Equal(t, 200, status)
	status, _ = tryPost(a.URL, abandonSecond)
	require.Equal(t, 0, status, "the response is cut: its outcome is not in the log")
	status, again := tryPost(b.URL, abandonSecond) // the app's retry, through B
	require.Equal(t, 200, status)
	require.Equal(t, conv, again)

	assert.Eventually(t, func() bool {
		st, _ := callStatuses(t, lb, conv)
		return assert.ObjectsAreEqual([]string{"finished", "failed", "finished"}, st)
	}, 15*time.Second, 50*time.Millisecond, "A closes the call it could not finish")
	st, errs := callStatuses(t, lb, conv)
	require.Len(t, errs, 3, "statuses %v", st)
	assert.Contains(t, errs[1], "this gateway could not record the call's answer")
	assert.Contains(t, scrape(t, ma), `turnlog_gateway_calls_total{api="chat.completions",outcome="abandoned"} 1`)
	verify(t, lb, conv)
}
