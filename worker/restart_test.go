package worker_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/internal/freeport"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// TestNATSRestartMidRun stops the server while requests are in flight and
// starts it again on the same data and port: workers reconnect, and every
// request completes exactly once.
func TestNATSRestartMidRun(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	dir := t.TempDir()
	// A port reserved for the test (freeport), not one the kernel picks:
	// the restart takes the same port, and a kernel-picked one may be
	// taken meanwhile as the source port of a connection (the workers'
	// reconnects, the tests beside this one).
	addr := "127.0.0.1:" + strconv.Itoa(freeport.Port(t))
	srv, err := embedded.Start(embedded.Config{DataDir: dir, Listen: addr})
	require.NoError(t, err)
	url := srv.ClientURL()
	tcpWorker(t, url)
	tcpWorker(t, url)
	l := clientLog(t, url)

	sent := sendAll(t, l, "restart", 20, 5, chatText)
	time.Sleep(150 * time.Millisecond) // let some requests get under way
	srv.Shutdown()
	srv, err = embedded.Start(embedded.Config{DataDir: dir, Listen: addr})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)

	waitDone(t, l, sent, 2*time.Minute)
	checkLog(t, l, sent)
}

// TestSIGKILLedWorkerProcess runs a real `turnlog worker` child process,
// kills it with SIGKILL while it works, and lets an in-process worker take
// over: nothing is lost or duplicated.
func TestSIGKILLedWorkerProcess(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	if testing.Short() {
		t.Skip("builds the turnlog binary")
	}
	bin := buildTurnlog(t)

	srv, err := embedded.Start(embedded.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	l := clientLog(t, srv.ClientURL())

	child := exec.Command(bin, "worker", "--nats-url", srv.ClientURL(), "--metrics", "", "--log-level", "error")
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	sent := sendAll(t, l, "kill", 20, 5, chatText)
	// Kill it once it has done some of the work, not all.
	deadline := time.Now().Add(time.Minute)
	for {
		done := 0
		for conv := range sent {
			if tail, err := l.Last(context.Background(), conv); err == nil && tail.Seq > 0 {
				done++
			}
		}
		if done >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	tcpWorker(t, srv.ClientURL())
	waitDone(t, l, sent, 2*time.Minute)
	checkLog(t, l, sent)
}

// TestWorkerProcessStartedBeforeNATS starts `turnlog worker` while nothing
// listens at its NATS URL: it waits (the README says workers retry
// forever), and serves requests once the server is up.
func TestWorkerProcessStartedBeforeNATS(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	if testing.Short() {
		t.Skip("builds the turnlog binary")
	}
	bin := buildTurnlog(t)
	addr := "127.0.0.1:" + strconv.Itoa(freeport.Port(t))

	var stderr syncbuf.Buffer
	child := exec.Command(bin, "worker", "--nats-url", "nats://"+addr, "--metrics", "")
	child.Stderr = &stderr
	require.NoError(t, child.Start())
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = child.Wait(); close(exited) }()
	t.Cleanup(func() { _ = child.Process.Kill(); <-exited })

	select {
	case <-exited:
		t.Fatalf("the worker exited while NATS was not up yet: %v\n%s", waitErr, stderr.String())
	case <-time.After(1500 * time.Millisecond):
	}
	srv, err := embedded.Start(embedded.Config{DataDir: t.TempDir(), Listen: addr})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	l := clientLog(t, srv.ClientURL())
	sent := sendAll(t, l, "late", 2, 2, chatText)
	waitDone(t, l, sent, time.Minute)
	checkLog(t, l, sent)
	assert.Equal(t, 1, strings.Count(stderr.String(), "waiting for NATS"), "the wait is logged once:\n%s", stderr.String())
}
