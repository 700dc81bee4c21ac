package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// openClusterLog opens the log over a cluster connection. A request can be
// lost while the routes of a cluster that just formed settle (at most once
// delivery), so each attempt is bounded and Open, idempotent, is retried.
func openClusterLog(t *testing.T, nc *nats.Conn, opts ...eventlog.Option) *eventlog.Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var l *eventlog.Log
	err := withRetry(ctx, 10*time.Second, func(ctx context.Context) error {
		var err error
		l, err = eventlog.Open(ctx, nc, opts...)
		return err
	})
	require.NoError(t, err)
	return l
}

// startClusterWorker runs a worker on its own connection to the cluster
// until the test ends.
func startClusterWorker(t *testing.T, c *natstest.Cluster, name string) {
	t.Helper()
	nc := c.Dial(t, name)
	l := openClusterLog(t, nc, eventlog.WithReplicas(3))
	profiles, err := profile.Load("")
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := worker.New(worker.Config{Log: l, Conn: nc, Profiles: profiles, Name: name, Logger: logger,
		AckWait: 10 * time.Second, ShutdownGrace: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Should Run give up with an error, start it again, as the
		// compose file's restart policy does with a worker that exits.
		for ctx.Err() == nil {
			if err := w.Run(ctx); err != nil && ctx.Err() == nil {
				t.Logf("worker %s stopped, restarting it: %v", name, err)
				time.Sleep(500 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// waitForClusterWorkers waits until n workers pull from every partition: a
// worker creates its consumers one by one, and a fault before it has them
// all would test its start-up, not its failover.
func waitForClusterWorkers(t *testing.T, l *eventlog.Log, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for p := range l.Partitions() {
		name := worker.ConsumerName(l.Names(), p)
		err := withRetry(ctx, 5*time.Second, func(ctx context.Context) error {
			cons, err := l.JetStream().Consumer(ctx, l.Names().RequestsStream, name)
			if err != nil {
				return err
			}
			if w := cons.CachedInfo().NumWaiting; w < n {
				return fmt.Errorf("%s: %d of %d workers pulling", name, w, n)
			}
			return nil
		})
		require.NoError(t, err)
	}
}

// withRetry is natstest.Retry, where a request that ended in
// request.failed is an answer, not a cluster in flux.
func withRetry(ctx context.Context, per time.Duration, fn func(context.Context) error) error {
	return natstest.Retry(ctx, per, func(ctx context.Context) error {
		err := fn(ctx)
		if errors.Is(err, worker.ErrFailed) {
			return natstest.Permanent(err)
		}
		return err
	})
}

// TestClusterSurvivesNodeLoss runs two workers on a 3-node cluster with R3
// streams, stops the server leading the events stream while conversations
// are being answered, and checks that every request still completes
// exactly once, in one piece, and that the restarted server holds the same
// log.
func TestClusterSurvivesNodeLoss(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	const conversations, perConversation = 20, 5
	c := natstest.StartCluster(t, 3)
	// The run gets 45s, a multiple of what it needs even with an election
	// in the middle; the checks after it get their own time.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	client := openClusterLog(t, c.Dial(t, "client"), eventlog.WithReplicas(3))
	startClusterWorker(t, c, "w1")
	startClusterWorker(t, c, "w2")
	waitForClusterWorkers(t, client, 2)

	var (
		mu       sync.Mutex
		sent     = map[string][]string{} // conversation -> request IDs
		ended    = map[string]uint64{}   // conversation -> sequence of its last request's end
		finished atomic.Int64
		wg       sync.WaitGroup
	)
	// The fault: once a quarter of the requests are done, the server
	// leading the events stream (where every step is appended) dies.
	stopped := make(chan int, 1)
	go func() {
		for finished.Load() < conversations*perConversation/4 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		victim := c.StreamLeader(client.Names().EventsStream)
		if victim < 0 {
			victim = c.MetaLeader()
		}
		if victim < 0 {
			victim = 0
		}
		c.Stop(victim)
		stopped <- victim
	}()

	for i := range conversations {
		conv := fmt.Sprintf("conv-%02d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perConversation {
				text := fmt.Sprintf("hello %d from %s", k, conv)
				if k%2 == 1 {
					text = fmt.Sprintf("count the words in %s says %d", conv, k) // a tool call: more steps
				}
				// The ID is chosen before the first attempt, so a retried
				// send is the same request (deduplicated by JetStream).
				req := worker.Request{Conversation: conv, RequestID: ulid.Make().String(), Text: text}
				mu.Lock()
				sent[conv] = append(sent[conv], req.RequestID)
				mu.Unlock()
				if err := withRetry(ctx, 3*time.Second, func(ctx context.Context) error {
					_, err := worker.Send(ctx, client, req)
					return err
				}); err != nil {
					t.Errorf("send %s to %s: %v", req.RequestID, conv, err)
					return
				}
				var res worker.Result
				if err := withRetry(ctx, 10*time.Second, func(ctx context.Context) error {
					var err error
					res, err = worker.Await(ctx, client, conv, req.RequestID, 0, 0)
					return err
				}); err != nil {
					t.Errorf("request %s of %s: %v", req.RequestID, conv, err)
				}
				if n := len(res.Events); n > 0 {
					mu.Lock()
					ended[conv] = max(ended[conv], res.Events[n-1].Seq)
					mu.Unlock()
				}
				finished.Add(1)
			}
		}()
	}
	wg.Wait()
	victim := <-stopped // sent even when ctx ended first
	if t.Failed() {
		dumpClusterState(t, c, client)
		t.FailNow()
	}
	t.Logf("stopped server %d mid-run; %d requests answered", victim, finished.Load())

	// Read the log through the cluster, then from the restarted server.
	ctx, cancelCheck := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelCheck()
	logs := map[string][]eventlog.Record{}
	for conv, ids := range sent {
		recs := readClusterLogUpTo(t, ctx, client, conv, ended[conv])
		checkClusterConversation(t, conv, ids, recs)
		logs[conv] = recs
	}

	c.Restart(victim)
	c.LeadStream(victim, client.Names().EventsStream)
	nc, err := nats.Connect(c.URL(victim))
	require.NoError(t, err)
	defer nc.Close()
	restarted := openClusterLog(t, nc)
	for conv, want := range logs {
		got := readClusterLog(t, ctx, restarted, conv)
		require.Equal(t, len(want), len(got), "%s: events on the restarted server", conv)
		for i := range want {
			assert.Equal(t, want[i].Seq, got[i].Seq, "%s event %d", conv, i+1)
			assert.Equal(t, want[i].ID, got[i].ID, "%s event %d", conv, i+1)
			assert.Equal(t, want[i].MsgID, got[i].MsgID, "%s event %d", conv, i+1)
		}
		turn, err := restarted.Load(ctx, conv)
		require.NoError(t, err, "%s folds on the restarted server", conv)
		assert.Equal(t, len(want), turn.Events)
	}
}

// readClusterLog reads a conversation's events, retrying transient errors.
func readClusterLog(t *testing.T, ctx context.Context, l *eventlog.Log, conv string) []eventlog.Record {
	t.Helper()
	var recs []eventlog.Record
	err := withRetry(ctx, 10*time.Second, func(ctx context.Context) error {
		recs = recs[:0]
		for rec, err := range l.Events(ctx, conv) {
			if err != nil {
				return err
			}
			recs = append(recs, rec)
		}
		return nil
	})
	require.NoError(t, err, "read %s", conv)
	return recs
}

// readClusterLogUpTo reads a conversation until its log reaches sequence
// seq. Reads are direct gets, which a follower may answer before it holds
// the last acknowledged message (a majority has it, not necessarily every
// replica).
func readClusterLogUpTo(t *testing.T, ctx context.Context, l *eventlog.Log, conv string, seq uint64) []eventlog.Record {
	t.Helper()
	var recs []eventlog.Record
	err := withRetry(ctx, 10*time.Second, func(ctx context.Context) error {
		recs = readClusterLog(t, ctx, l, conv)
		if n := len(recs); n == 0 || recs[n-1].Seq < seq {
			return fmt.Errorf("read %d events of %s, not yet up to sequence %d", n, conv, seq)
		}
		return nil
	})
	require.NoError(t, err)
	return recs
}

// checkClusterConversation proves that nothing was lost, duplicated or
// interleaved in one conversation's log.
func checkClusterConversation(t *testing.T, conv string, ids []string, recs []eventlog.Record) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	users, completed := map[string]int{}, map[string]int{}
	blocks := map[string]string{}
	done := map[string]bool{} // causes whose run of events has ended
	prev := ""
	for _, r := range recs {
		if !want[r.Cause] {
			t.Errorf("%s@%d: event %s of unknown request %q", conv, r.Pos, r.Type, r.Cause)
		}
		// The events of one request form one contiguous run: a cause that
		// shows up again after another request's events interleaved.
		if r.Cause != prev {
			if done[r.Cause] {
				t.Errorf("%s@%d: request %s resumes after request %s: requests interleaved", conv, r.Pos, r.Cause, prev)
			}
			done[prev] = true
			prev = r.Cause
		}
		switch p := r.Payload.(type) {
		case events.UserAppended:
			users[r.Cause]++
		case events.RequestCompleted:
			completed[r.Cause]++
		case events.RequestFailed:
			t.Errorf("%s@%d: request %s failed: %s", conv, r.Pos, r.Cause, p.Reason)
		}
		if block := blockID(r.Event); block != "" {
			if at, dup := blocks[block]; dup {
				t.Errorf("%s@%d: block %s created again (first by %s)", conv, r.Pos, block, at)
			}
			blocks[block] = fmt.Sprintf("%s@%d", conv, r.Pos)
		}
	}
	for _, id := range ids {
		assert.Equal(t, 1, users[id], "%s: user.appended of request %s", conv, id)
		assert.Equal(t, 1, completed[id], "%s: request.completed of request %s", conv, id)
	}
}

// dumpClusterState logs where the cluster and the request consumers stand, so a
// failure tells an election that never ended from a worker that stalled.
func dumpClusterState(t *testing.T, c *natstest.Cluster, l *eventlog.Log) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.Logf("events: %s", c.Describe(l.Names().EventsStream))
	t.Logf("requests: %s", c.Describe(l.Names().RequestsStream))
	for p := range l.Partitions() {
		name := worker.ConsumerName(l.Names(), p)
		cons, err := l.JetStream().Consumer(ctx, l.Names().RequestsStream, name)
		if err != nil {
			t.Logf("%s: %v", name, err)
			continue
		}
		info := cons.CachedInfo()
		leader := ""
		if info.Cluster != nil {
			leader = info.Cluster.Leader
		}
		t.Logf("%s: leader %s, pending %d, ack pending %d, redelivered %d, waiting %d, delivered %d, ack floor %d",
			name, leader, info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting,
			info.Delivered.Stream, info.AckFloor.Stream)
	}
}
