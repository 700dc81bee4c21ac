package benchmark

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/worker"
)

// workerMemory measures what an operator sees of a worker's memory: the
// peak resident set (VmHWM) of a `turnlog worker` process, on its own
// beside this one, after it served MemoryRequests requests over
// MemoryConversations conversations (10,000 over 1,000), ten rounds of one
// request per conversation. It needs the turnlog binary (Config.WorkerCommand)
// and Linux's /proc; without either the figures stay 0.
func (r *runner) workerMemory(ctx context.Context, _ *eventlog.Log) error {
	if len(r.cfg.WorkerCommand) == 0 {
		r.say("worker memory: skipped (no worker command)")
		return nil
	}
	convs, perConv := r.cfg.MemoryConversations, r.cfg.MemoryRequests/r.cfg.MemoryConversations
	r.res.WorkerMemoryRequests, r.res.WorkerMemoryConversations = convs*perConv, convs
	r.say("worker memory: %d requests over %d conversations, served by a `turnlog worker` process", convs*perConv, convs)
	dir, err := os.MkdirTemp("", "turnlog-bench-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	l, err := eventlog.Open(ctx, nc)
	if err != nil {
		return err
	}

	args := append(append([]string(nil), r.cfg.WorkerCommand[1:]...), "--nats-url", srv.ClientURL(), "--metrics", "", "--log-level", "error")
	cmd := exec.CommandContext(ctx, r.cfg.WorkerCommand[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TURNLOG_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the worker: %w", err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	for round := 0; round < perConv; round++ {
		if err := memoryRound(ctx, l, convs, round); err != nil {
			return err
		}
	}
	peak, err := peakRSS(cmd.Process.Pid)
	if errors.Is(err, os.ErrNotExist) {
		r.say("worker memory: no /proc on this system; peak not measured")
		return nil
	}
	if err != nil {
		return err
	}
	r.res.WorkerPeakRSSMB = float64(peak) / (1 << 20)
	return nil
}

// memoryRound sends one request to each conversation, from a few clients
// at once, and waits until every one is answered.
func memoryRound(ctx context.Context, l *eventlog.Log, convs, round int) error {
	const senders = 16
	ids := make([]string, convs)
	errs := make(chan error, senders)
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := s; c < convs; c += senders {
				req := worker.Request{Conversation: fmt.Sprintf("mem-%d", c), RequestID: ulid.Make().String(),
					Text: text(200, round*convs+c)}
				if _, err := worker.Send(ctx, l, req); err != nil {
					errs <- err
					return
				}
				ids[c] = req.RequestID
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for c := 0; c < convs; c++ {
		for {
			tail, err := l.Last(ctx, fmt.Sprintf("mem-%d", c))
			if err != nil {
				return err
			}
			if tail.Cause == ids[c] && tail.Closed() {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("worker memory: request %s of mem-%d not answered in 5 minutes", ids[c], c)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return nil
}

// peakRSS is a process's peak resident set in bytes (VmHWM).
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// RunWorkerMemory runs only the worker memory step, for comparing worker
// builds (BenchmarkWorkerMemory).
func RunWorkerMemory(ctx context.Context, cfg Config) (Results, error) {
	cfg.defaults()
	r := &runner{cfg: cfg}
	err := r.workerMemory(ctx, nil)
	return r.res, err
}
