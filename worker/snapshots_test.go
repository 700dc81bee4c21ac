package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// snapshotIsCurrent waits (up to a hang guard) until conv's snapshot ends
// at its last message (the next load reads the snapshot and one message)
// and its history cache is written.
func snapshotIsCurrent(t *testing.T, l *eventlog.Log, conv string) {
	t.Helper()
	ctx := context.Background()
	last, err := l.LastSeq(ctx, conv)
	require.NoError(t, err)
	require.NotZero(t, last)
	history, err := l.JetStream().KeyValue(ctx, l.Names().HistoryBucket)
	require.NoError(t, err)
	deadline := time.Now().Add(20 * time.Second)
	for {
		seq, _, err := l.SnapshotAt(ctx, conv)
		require.NoError(t, err)
		_, herr := history.Get(ctx, conv)
		if seq == last && herr == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the snapshot ends at %d, the log at %d; history cache: %v", conv, seq, last, herr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServedConversationsGetSnapshots: a conversation a worker served has
// a snapshot at its last message, and a history cache, once the worker
// lets go of its Turn,
// whether the Turn sat idle, was pushed out of the cache by others, or the
// worker stopped; far fewer events than the snapshot interval included.
func TestServedConversationsGetSnapshots(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(*worker.Config)
		stop  bool
	}{
		{name: "idle", tweak: func(c *worker.Config) { c.IdleSnapshot = 50 * time.Millisecond }},
		{name: "evicted", tweak: func(c *worker.Config) { c.CacheBytes = 1; c.IdleSnapshot = -1 }},
		{name: "stopped", tweak: func(c *worker.Config) { c.IdleSnapshot = -1 }, stop: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.Start(t)
			w := startWorkerStoppable(t, srv, tc.tweak)
			for i := 0; i < 3; i++ {
				conv := fmt.Sprintf("c%d", i)
				_, err := ask(t, w.log, conv, "hello")
				require.NoError(t, err)
				if tc.stop {
					seq, _, err := w.log.SnapshotAt(context.Background(), conv)
					require.NoError(t, err)
					assert.Zero(t, seq, "no snapshot before the worker stops")
				}
			}
			if tc.stop {
				w.stop()
			}
			for i := 0; i < 3; i++ {
				snapshotIsCurrent(t, w.log, fmt.Sprintf("c%d", i))
			}
		})
	}
}

type stoppable struct {
	log  *eventlog.Log
	stop func()
}

// startWorkerStoppable is startWorker with a function that stops the
// worker and waits for Run to return.
func startWorkerStoppable(t *testing.T, srv *natstest.Server, tweak func(*worker.Config)) stoppable {
	t.Helper()
	l, _, stop := launchWorker(t, srv, tweak)
	return stoppable{log: l, stop: stop}
}

// TestErasedConversationLeavesTheWorker: a conversation erased while a
// worker holds its Turn leaves the worker's memory (its cache counts one
// Turn less; it counted it until erasures were followed), and is not
// written back as a snapshot or a history cache when the worker stops.
func TestErasedConversationLeavesTheWorker(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l, wk, stop := launchWorker(t, srv, func(c *worker.Config) { c.IdleSnapshot = -1 })
	w := stoppable{log: l, stop: stop}
	for _, conv := range []string{"secret", "other"} {
		_, err := ask(t, w.log, conv, "my account number is 42")
		require.NoError(t, err)
	}
	require.Contains(t, scrape(t, wk), "turnlog_turn_cache_turns 2")
	_, err := w.log.Erase(ctx, "secret")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(scrape(t, wk), "turnlog_turn_cache_turns 1") },
		5*time.Second, 10*time.Millisecond, "the erased conversation's Turn is let go")
	w.stop()
	snaps, err := w.log.JetStream().KeyValue(ctx, w.log.Names().SnapshotsBucket)
	require.NoError(t, err)
	_, err = snaps.Get(ctx, "secret")
	assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "no snapshot of the erased conversation")
	history, err := w.log.JetStream().KeyValue(ctx, w.log.Names().HistoryBucket)
	require.NoError(t, err)
	_, err = history.Get(ctx, "secret")
	assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "nor a history cache")
}
