package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/storagetest"
	"github.com/turnlog/turnlog/worker"
)

// TestStorageFullKeepsAcceptedRequest is issue 24's lost request: JetStream's
// storage fills up after a request was accepted. The worker cannot store
// the request's outcome, a failure nor a dead letter; it used to retry it
// until its last delivery and then log "the request is lost". Now it holds
// the request, for longer than JetStream would deliver it, new requests
// are refused at the door with the cause, and once space is freed (no
// restart) the held request is answered.
func TestStorageFullKeepsAcceptedRequest(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	if testing.Short() {
		t.Skip("holds a request through more than its deliveries, about 25 s")
	}
	srv := natstest.Start(t, natstest.WithMaxStore(8<<20))
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(8<<20))
	require.NoError(t, err)

	held, err := worker.Send(ctx, l, worker.Request{Conversation: "held", Text: "are you there?"})
	require.NoError(t, err, "accepted while there was room")

	storagetest.Fill(t, l)
	_, err = worker.Send(ctx, l, worker.Request{Conversation: "late", Text: "hello"})
	require.ErrorIs(t, err, eventlog.ErrStorageFull, "a new request is refused at the door")
	assert.ErrorContains(t, err, "JetStream storage is full: ")
	assert.ErrorContains(t, err, "raise --max-store")

	_, w := runWorker(t, srv, func(c *worker.Config) { c.Log = l; c.MaxDeliver = 1 })
	// Full for longer than the request's deliveries last (MaxDeliver +
	// LostDeliveries): attempts are counted as held (after the fix) or as
	// redeliveries (before it, until the last one lost the request).
	deliveries := float64(1 + worker.LostDeliveries)
	require.Eventually(t, func() bool {
		return metricValue(t, w.Metrics().Handler(), "turnlog_storage_full_total") > deliveries ||
			metricValue(t, w.Metrics().Handler(), "turnlog_redeliveries_total") >= deliveries
	}, 90*time.Second, 100*time.Millisecond)

	storagetest.Free(t, l, 0)

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := worker.Await(wctx, l, "held", held.RequestID, 0, 0)
	require.NoError(t, err, "the request accepted before the storage filled is answered once space is freed")
	assert.Equal(t, "You said: are you there?", res.Answer)
	dead, err := l.DeadLetterCount(ctx)
	require.NoError(t, err)
	assert.Zero(t, dead, "nothing was dead-lettered")
}

// A request that can only end as a dead letter (its subject names no valid
// conversation) is not terminated while the storage is too full to take
// the dead letter: it is held, and dead-lettered once space is freed.
func TestStorageFullKeepsDeadLetter(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(8<<20))
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(8<<20))
	require.NoError(t, err)
	bad := strings.Repeat("x", 200) // longer than a conversation ID may be
	_, err = l.PublishRequest(ctx, l.Names().ChatSubject(bad), []byte(`{"text":"hi"}`), "bad1")
	require.NoError(t, err)

	storagetest.Fill(t, l)
	_, w := runWorker(t, srv, func(c *worker.Config) { c.Log = l; c.MaxDeliver = 1 })
	require.Eventually(t, func() bool {
		return metricValue(t, w.Metrics().Handler(), "turnlog_storage_full_total") >= 3
	}, 60*time.Second, 50*time.Millisecond, "the request is held while its dead letter cannot be stored")
	n, err := l.DeadLetterCount(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	storagetest.Free(t, l, 0)
	require.Eventually(t, func() bool {
		n, err := l.DeadLetterCount(ctx)
		return err == nil && n == 1
	}, 30*time.Second, 50*time.Millisecond, "dead-lettered once there is room")
}
