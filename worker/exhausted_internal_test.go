package worker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestSweepEndsRequestsNoWorkerHeardOf: JetStream announces a request it
// gave up on once, to whoever listens then. One that ran out of
// deliveries while no worker listened (every worker was down, or dying
// with it) is found by the sweep: it ends as request.failed, with the
// user's text, and leaves the requests stream. Requests not delivered yet,
// or in hand, are left alone.
func TestSweepEndsRequestsNoWorkerHeardOf(t *testing.T) {
	w, l, ctx := idleWorker(t)
	req, err := Send(ctx, l, Request{Conversation: "forgotten", Text: "is anyone there?"})
	require.NoError(t, err)

	// The partition consumer delivers it once, to nobody that acknowledges
	// it, and then gives up (MaxDeliver 1), announcing it to no listener.
	s, err := l.JetStream().Stream(ctx, l.Names().RequestsStream)
	require.NoError(t, err)
	stored, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	p, err := strconv.Atoi(strings.Split(stored.Subject, ".")[2])
	require.NoError(t, err, stored.Subject)
	c, err := l.JetStream().CreateConsumer(ctx, l.Names().RequestsStream, jetstream.ConsumerConfig{Durable: ConsumerName(l.Names(), p),
		FilterSubject: l.Names().ChatPartition(p), AckPolicy: jetstream.AckExplicitPolicy, AckWait: 300 * time.Millisecond, MaxDeliver: 1})
	require.NoError(t, err)
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	require.NotNil(t, <-batch.Messages(), "delivered once")

	// In hand: the sweep leaves it.
	require.NoError(t, w.sweepExhausted(ctx))
	info, err := s.Info(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, info.State.Msgs, "a request in hand is not swept")

	time.Sleep(400 * time.Millisecond)
	batch, err = c.Fetch(1, jetstream.FetchMaxWait(500*time.Millisecond))
	require.NoError(t, err)
	for range batch.Messages() {
		t.Fatal("delivered again past MaxDeliver")
	}

	require.NoError(t, w.sweepExhausted(ctx))
	types, reason := requestEnd(t, l, "forgotten", req.RequestID)
	assert.Equal(t, []events.Type{events.TypeUserAppended, events.TypeRequestFailed}, types, "the user's text is kept beside the reason")
	assert.Contains(t, reason, "gave up after all its deliveries: the worker handling it stopped each time")
	info, err = s.Info(ctx)
	require.NoError(t, err)
	assert.Zero(t, info.State.Msgs, "the request left the requests stream")

	// Swept again: nothing more is written.
	require.NoError(t, w.sweepExhausted(ctx))
	n, err := l.LastSeq(ctx, "forgotten")
	require.NoError(t, err)
	assert.NotZero(t, n)
	count := 0
	for _, err := range l.Events(ctx, "forgotten") {
		require.NoError(t, err)
		count++
	}
	assert.Equal(t, 2, count)
}
