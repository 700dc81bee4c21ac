package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// buildTurnlog builds the turnlog binary into a temp dir, so a test can run
// servers as separate processes, as users do.
func buildTurnlog(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "turnlog")
	build := exec.Command("go", "build", "-o", bin, "github.com/turnlog/turnlog/cmd/turnlog")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	return bin
}

// processEnv is this process's environment without the variables that
// steer how turnlog connects, plus env.
func processEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(connectionEnv, k) && !strings.HasPrefix(k, "TURNLOG_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// serveProcess is a `turnlog serve` running as a child process.
type serveProcess struct {
	cmd     *exec.Cmd
	out     *syncbuf.Buffer
	natsURL string
	done    chan error
}

// runServe starts `turnlog serve --data data` on free ports as a child
// process and returns once it printed its banner or exited (then natsURL
// is "").
func runServe(t *testing.T, bin, data string) *serveProcess {
	t.Helper()
	p := &serveProcess{out: &syncbuf.Buffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, "serve", "--data", data, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--workers", "1", "--log-level", "error")
	p.cmd.Env = processEnv()
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	natsRe := regexp.MustCompile(`listening on (nats://\S+)`)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-p.done:
			p.done <- err
			return p
		case <-deadline:
			t.Fatalf("serve neither started nor stopped within 60s:\n%s", p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if out := p.out.String(); strings.Contains(out, "ready; try: ") {
			p.natsURL = natsRe.FindStringSubmatch(out)[1]
			return p
		}
	}
}

// exited waits for the process to end and returns its exit code.
func (p *serveProcess) exited(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60s:\n%s", p.out.String())
		return -1
	}
}

// stop ends the server as Ctrl-C does and waits for it.
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 0, p.exited(t), p.out.String())
}

// turnlogRun runs the turnlog binary with args against data and returns
// its combined output and exit code.
func turnlogRun(t *testing.T, bin, data string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = processEnv("TURNLOG_DATA=" + data)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("run turnlog %v: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// conversationEvents is each conversation's event count as `ls --json`
// of the server at natsURL reports it.
func conversationEvents(t *testing.T, bin, data, natsURL string) map[string]int {
	t.Helper()
	out, code := turnlogRun(t, bin, data, "ls", "--json", "--nats-url", natsURL)
	require.Equal(t, 0, code, out)
	var doc struct {
		Conversations []struct {
			ID     string `json:"id"`
			Events int    `json:"events"`
		} `json:"conversations"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	got := map[string]int{}
	for _, c := range doc.Conversations {
		got[c.ID] = c.Events
	}
	return got
}

// TestSecondServerOnADataDirectoryIsRefused reproduces issue 23, item 1:
// a second `turnlog serve` on the data directory of a running one started
// without complaint, and the two servers' writes to one JetStream store
// destroyed each other's acknowledged conversations. The second must be
// refused before it opens anything, naming the directory and the server
// that holds it; what was written through the first survives a restart.
func TestSecondServerOnADataDirectoryIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the turnlog binary and runs servers as processes")
	}
	bin := buildTurnlog(t)
	data := filepath.Join(t.TempDir(), "data")

	a := runServe(t, bin, data)
	require.NotEmpty(t, a.natsURL, "the first server starts:\n%s", a.out.String())

	b := runServe(t, bin, data)
	require.Empty(t, b.natsURL, "a second server on %s started:\n%s", data, b.out.String())
	assert.NotEqual(t, 0, b.exited(t), "the second server exits with an error")
	refusal := b.out.String()
	assert.Contains(t, refusal, data, "the refusal names the directory")
	assert.Contains(t, refusal, "PID "+strconv.Itoa(a.cmd.Process.Pid), "the refusal names the holder's PID")
	assert.Contains(t, refusal, a.natsURL, "the refusal names the holder's NATS address")
	assert.NotContains(t, refusal, "listening on", "the refused server never opened the store")

	out, code := turnlogRun(t, bin, data, "chat", "--nats-url", a.natsURL, "-m", "via A", "conv-a")
	require.Equal(t, 0, code, out)
	before := conversationEvents(t, bin, data, a.natsURL)
	require.Contains(t, before, "conv-a")
	a.stop(t)

	again := runServe(t, bin, data)
	require.NotEmpty(t, again.natsURL, "a server starts on the directory once the first stopped:\n%s", again.out.String())
	assert.Equal(t, before, conversationEvents(t, bin, data, again.natsURL), "nothing acknowledged was lost")
}

// TestKilledServersDirectoryOpensAtOnce: the lock is the kernel's, so a
// SIGKILLed server leaves none behind: the next server on its directory
// starts at once and finds what the killed one acknowledged.
func TestKilledServersDirectoryOpensAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the turnlog binary and runs servers as processes")
	}
	bin := buildTurnlog(t)
	data := filepath.Join(t.TempDir(), "data")

	a := runServe(t, bin, data)
	require.NotEmpty(t, a.natsURL, a.out.String())
	out, code := turnlogRun(t, bin, data, "chat", "--nats-url", a.natsURL, "-m", "before the kill", "killed")
	require.Equal(t, 0, code, out)
	require.NoError(t, a.cmd.Process.Kill())
	a.exited(t)

	b := runServe(t, bin, data)
	require.NotEmpty(t, b.natsURL, "the killed server's directory opens again:\n%s", b.out.String())
	assert.Contains(t, conversationEvents(t, bin, data, b.natsURL), "killed")
	out, code = turnlogRun(t, bin, data, "chat", "--nats-url", b.natsURL, "-m", "after the kill", "killed")
	assert.Equal(t, 0, code, out)
}
