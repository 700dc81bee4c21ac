package worker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// takeoverBudget is how soon after a worker dies its partitions must be
// served by another worker, with the default settings (issue 14 §6).
const takeoverBudget = 5 * time.Second

// buildTurnlog builds the turnlog binary into a temp dir.
func buildTurnlog(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "turnlog")
	build := exec.Command("go", "build", "-o", bin, "github.com/turnlog/turnlog/cmd/turnlog")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	return bin
}

// TestKilledWorkerProcessPartitionsTakenOverInSeconds runs a `turnlog
// worker` process beside an in-process worker, both with the default
// settings, SIGKILLs the process while it holds requests, and measures how
// long the conversations it left unfinished wait before the other worker
// moves them on: within takeoverBudget, where the 60 s ack wait of old made
// them wait about a minute.
func TestKilledWorkerProcessPartitionsTakenOverInSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the turnlog binary")
	}
	bin := buildTurnlog(t)
	srv, err := embedded.Start(embedded.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	l := clientLog(t, srv.ClientURL())

	// The survivor: default settings, as `turnlog worker` has them.
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	wl, err := eventlog.Open(context.Background(), nc)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	survivor, err := worker.New(worker.Config{Log: wl, Conn: nc, Profiles: profiles, Name: "survivor",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = survivor.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// The kill proves something only if the process held requests when it
	// died; on a loaded machine it may not have pulled any yet (the
	// survivor took them all), so such a round is inconclusive and run
	// again, with a new process and new conversations.
	for round := 1; ; round++ {
		redelivered, slow, held := killRound(t, bin, srv.ClientURL(), l, survivor, fmt.Sprintf("takeover%d", round))
		if !held && round < 3 {
			t.Logf("round %d: the killed process held no request; again", round)
			continue
		}
		require.True(t, held, "in %d rounds the killed process never held a request: the test proved nothing", round)
		t.Logf("round %d: %.0f requests redelivered to the survivor", round, redelivered)
		assert.Empty(t, slow, "conversations that waited longer than %s after the worker died: %s", takeoverBudget, strings.Join(slow, ", "))
		return
	}
}

// killRound starts a `turnlog worker` process, sends requests over 32
// conversations named prefix-*, SIGKILLs the process once 8 of them have
// started, and waits until every request is done. It returns the requests
// redelivered to the survivor in the round, the conversations that waited
// longer than takeoverBudget, and whether the process held any request.
func killRound(t *testing.T, bin, url string, l *eventlog.Log, survivor *worker.Worker, prefix string) (float64, []string, bool) {
	t.Helper()
	before := metricValue(t, survivor.Metrics().Handler(), "turnlog_redeliveries_total")
	child := exec.Command(bin, "worker", "--nats-url", url, "--metrics", "", "--log-level", "error")
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	waitForWorkers(t, l, 2)

	// Enough requests that the process holds several when it dies: every
	// partition it is preferred for has one in hand or on the way.
	sent := sendAll(t, l, prefix, 32, 3, chatText)
	for {
		started := 0
		for conv := range sent {
			if seq, err := l.LastSeq(context.Background(), conv); err == nil && seq > 0 {
				started++
			}
		}
		if started >= 8 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	_ = child.Wait()

	// Per conversation unfinished at the kill: when its log moved again.
	last := map[string]uint64{}
	unfinished := map[string]bool{}
	for conv, ids := range sent {
		tail, err := l.Last(context.Background(), conv)
		require.NoError(t, err)
		last[conv] = tail.Seq
		if tail.Cause != ids[len(ids)-1] || !tail.Closed() {
			unfinished[conv] = true
		}
	}
	moved := map[string]time.Duration{}
	for deadline := killed.Add(2 * time.Minute); len(moved) < len(unfinished) && time.Now().Before(deadline); {
		for conv := range unfinished {
			if _, ok := moved[conv]; ok {
				continue
			}
			if seq, err := l.LastSeq(context.Background(), conv); err == nil && seq != last[conv] {
				moved[conv] = time.Since(killed)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitDone(t, l, sent, 2*time.Minute)
	checkLog(t, l, sent)

	var longest time.Duration
	var slow []string
	for conv, d := range moved {
		longest = max(longest, d)
		if d > takeoverBudget {
			slow = append(slow, fmt.Sprintf("%s %s", conv, d.Round(time.Millisecond)))
		}
	}
	redelivered := metricValue(t, survivor.Metrics().Handler(), "turnlog_redeliveries_total") - before
	t.Logf("%s: %d conversations unfinished at the kill; the longest waited %s", prefix, len(unfinished), longest.Round(time.Millisecond))
	return redelivered, slow, redelivered > 0
}

// metricValue reads one unlabelled series from a Prometheus handler, as a
// scraper would.
func metricValue(t *testing.T, h http.Handler, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, line)
			return f
		}
	}
	t.Fatalf("no series %s in the metrics", name)
	return 0
}

// waitForWorkers waits until n workers pull from every partition.
func waitForWorkers(t *testing.T, l *eventlog.Log, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for p := range l.Partitions() {
		for {
			cons, err := l.JetStream().Consumer(context.Background(), l.Names().RequestsStream, worker.ConsumerName(l.Names(), p))
			if err == nil && cons.CachedInfo().NumWaiting >= n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("partition %d: fewer than %d workers pulling after a minute (%v)", p, n, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
