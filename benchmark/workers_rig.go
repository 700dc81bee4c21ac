package benchmark

// This file holds the rig of `turnlog bench --workers`: an embedded server
// with workers on it, and the wait for what they have handled.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	_ "github.com/turnlog/turnlog/engine/scripted" // the rig's workers answer with the default profile's scripted engine
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// workerRig is an embedded server with workers on it, as startWorkers
// makes it.
type workerRig struct {
	// log is the client side's: senders and readers use it.
	log     *eventlog.Log
	workers []*worker.Worker
	// conns are the workers' connections, one each.
	conns []*nats.Conn
	// teardown ends the workers and removes the server and its directory.
	teardown
}

// startWorkers starts an embedded server in a temporary directory and n
// workers on it (default profile, scripted engine), each with its own
// connection as separate processes would have.
func startWorkers(ctx context.Context, n int) (_ *workerRig, err error) {
	r := &workerRig{}
	defer func() {
		if err != nil {
			r.stop()
		}
	}()
	srv, _, log, err := r.startLog(ctx, "turnlog-bench-workers-")
	if err != nil {
		return nil, err
	}
	r.log = log
	profiles, err := profile.Load("")
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	wctx, stopRun := context.WithCancel(ctx)
	var wg sync.WaitGroup
	r.undo = append(r.undo, func() {
		stopRun()
		wg.Wait()
		for _, c := range r.conns {
			c.Close()
		}
	})
	for i := 0; i < n; i++ {
		wc, err := srv.Connect()
		if err != nil {
			return nil, err
		}
		r.conns = append(r.conns, wc)
		wl, err := eventlog.Open(ctx, wc)
		if err != nil {
			return nil, err
		}
		w, err := worker.New(worker.Config{Log: wl, Conn: wc, Profiles: profiles, Logger: quiet, Name: fmt.Sprintf("bench-%d", i)})
		if err != nil {
			return nil, err
		}
		r.workers = append(r.workers, w)
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(wctx) }()
	}
	return r, nil
}

// handled is how many requests the rig's workers have acknowledged.
func (r *workerRig) handled() int64 {
	var n int64
	for _, w := range r.workers {
		n += w.Handled()
	}
	return n
}

// awaitHandled waits until the workers have acknowledged n requests, or
// until their count has not moved for a second (a request that failed
// without an ack, say: the caller's check of the log then decides).
func (r *workerRig) awaitHandled(ctx context.Context, n int64) {
	seen, moved := r.handled(), time.Now()
	for seen < n && time.Since(moved) < time.Second && ctx.Err() == nil {
		// Half a millisecond: a round lasts about 100 ms, and a shorter
		// sleep costs more wake-ups than it gains in precision.
		time.Sleep(500 * time.Microsecond)
		if now := r.handled(); now != seen {
			seen, moved = now, time.Now()
		}
	}
}
