package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "github.com/turnlog/turnlog/engine/scripted" // provider "scripted", the default profile's
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// startWorker runs a worker with the default profiles until the test ends.
func startWorker(t *testing.T, srv *natstest.Server, tweak func(*worker.Config)) *eventlog.Log {
	t.Helper()
	l, _ := runWorker(t, srv, tweak)
	return l
}

// runWorker is startWorker that also returns the worker.
func runWorker(t *testing.T, srv *natstest.Server, tweak func(*worker.Config)) (*eventlog.Log, *worker.Worker) {
	t.Helper()
	l, w, _ := launchWorker(t, srv, tweak)
	return l, w
}

// launchWorker runs a worker until the test ends or stop is called (stop
// waits for Run to return and may be called more than once).
func launchWorker(t *testing.T, srv *natstest.Server, tweak func(*worker.Config)) (*eventlog.Log, *worker.Worker, func()) {
	t.Helper()
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	cfg := worker.Config{Log: l, Conn: srv.Conn, Profiles: profiles, AckWait: 2 * time.Second, ShutdownGrace: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if tweak != nil {
		tweak(&cfg)
	}
	w, err := worker.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return l, w, stop
}

// ask sends one request and waits for its end.
func ask(t *testing.T, l *eventlog.Log, conv, text string) (worker.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: text})
	require.NoError(t, err)
	return worker.Await(ctx, l, conv, req.RequestID, turn.Seq, turn.Events)
}

func TestWorkerAnswers(t *testing.T) {
	l := startWorker(t, natstest.Start(t), nil)
	res, err := ask(t, l, "c1", "hello there")
	require.NoError(t, err)
	assert.Equal(t, "You said: hello there", res.Answer)

	res, err = ask(t, l, "c1", "count the words in a b c d")
	require.NoError(t, err)
	assert.Equal(t, `There are 4 words in "a b c d".`, res.Answer)

	turn, err := l.Load(context.Background(), "c1")
	require.NoError(t, err)
	sp, _, ok := turn.SystemPrompt()
	require.True(t, ok)
	assert.Equal(t, "You are a helpful assistant.", sp.Text)
}

// TestWorkerSavesSnapshots: a worker answers from its cached Turn and so
// seldom loads, yet the conversation must get snapshots, or a restarted
// worker would fold its whole history.
func TestWorkerSavesSnapshots(t *testing.T) {
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn, eventlog.WithSnapshotEvery(10))
	require.NoError(t, err)
	startWorker(t, srv, func(c *worker.Config) { c.Log = l })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 4; i++ {
		// No Load on this side: only the worker could write a snapshot.
		last, err := l.LastSeq(ctx, "snap")
		require.NoError(t, err)
		req, err := worker.Send(ctx, l, worker.Request{Conversation: "snap", Text: fmt.Sprintf("message %d", i)})
		require.NoError(t, err)
		_, err = worker.Await(ctx, l, "snap", req.RequestID, last, 0)
		require.NoError(t, err)
	}
	kv, err := l.JetStream().KeyValue(ctx, l.Names().SnapshotsBucket)
	require.NoError(t, err)
	// The worker saves a snapshot after the step that the client saw
	// end the request: wait for it rather than race it.
	require.Eventually(t, func() bool {
		entry, err := kv.Get(ctx, "snap")
		return err == nil && entry.Revision() > 1
	}, 10*time.Second, 10*time.Millisecond, "snapshots are saved and renewed as the conversation grows")

	// And a good one: a load through it holds every event of the log.
	loaded, err := l.Load(context.Background(), "snap")
	require.NoError(t, err)
	n := 0
	for _, err := range l.Events(context.Background(), "snap") {
		require.NoError(t, err)
		n++
	}
	assert.Equal(t, n, loaded.Events)
	assert.Len(t, loaded.Blocks, 1+4*3, "the system prompt, and per request the user block, reasoning and answer")
}

// TestStatusesWaitsForASlowWorker: `turnlog status` gathered the workers'
// answers until 500 ms passed without one, so a worker that answered
// later (a busy machine, a slow link: here its storage report takes 800
// ms) was not listed, and status said no worker runs, with no storage
// limit. The first answer is waited for longer.
func TestStatusesWaitsForASlowWorker(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, func(c *worker.Config) {
		c.Name = "slow"
		c.Storage = func() *worker.Storage {
			time.Sleep(800 * time.Millisecond)
			return &worker.Storage{MaxStore: 1 << 30, DiskFree: -1}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Once it answers at all (it subscribes as it starts).
	require.Eventually(t, func() bool {
		st, err := worker.Statuses(ctx, srv.Conn, l.Names(), time.Second)
		return err == nil && len(st) == 1
	}, 20*time.Second, 10*time.Millisecond)

	st, err := worker.Statuses(ctx, srv.Conn, l.Names(), 500*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, st, 1, "the worker that answers after 800 ms is listed")
	assert.Equal(t, "slow", st[0].Name)
	require.NotNil(t, st[0].Storage)
	assert.Equal(t, int64(1<<30), st[0].Storage.MaxStore)
}

// TestStatusesFindsAWorkerThatStartsWhileItAsks: `turnlog status` run
// right after serve started pinged the workers before they listened, and
// the ping was lost: status said that no worker runs (a CI failure of
// TestStatusShowsStorage). Until a worker answers, the ping is sent again.
func TestStatusesFindsAWorkerThatStartsWhileItAsks(t *testing.T) {
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	type result struct {
		st  []worker.Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := worker.Statuses(context.Background(), srv.Conn, l.Names(), 500*time.Millisecond)
		done <- result{st, err}
	}()
	time.Sleep(700 * time.Millisecond) // the ping is out before the worker listens
	startWorker(t, srv, func(c *worker.Config) { c.Name = "late" })
	res := <-done
	require.NoError(t, res.err)
	require.Len(t, res.st, 1, "the worker that started while status asked is listed, once")
	assert.Equal(t, "late", res.st[0].Name)
}
