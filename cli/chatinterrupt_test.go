package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// startWorker runs a worker with the default profiles on l until the test
// ends.
func startWorker(t *testing.T, l *eventlog.Log) {
	t.Helper()
	profiles, err := profile.Load("")
	require.NoError(t, err)
	runWorker(t, worker.Config{Log: l, Conn: l.JetStream().Conn(), Profiles: profiles,
		ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler)})
}

// requestsStored is how many chat requests the requests stream holds.
func requestsStored(t *testing.T, l *eventlog.Log) uint64 {
	t.Helper()
	s, err := l.JetStream().Stream(context.Background(), l.Names().RequestsStream)
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return info.State.Msgs
}

// eventually polls cond until it holds, failing the test after a minute
// (a bound on a hung test, not a performance threshold).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// usersOf counts the user.appended events of request id in conv.
func usersOf(t *testing.T, l *eventlog.Log, conv, id string) int {
	t.Helper()
	n := 0
	for rec, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		if rec.Type == events.TypeUserAppended && rec.Cause == id {
			n++
		}
	}
	return n
}

var awaitCommand = regexp.MustCompile(`turnlog chat --request-id ([0-9A-Z]{26}) -m '([^']*)' ([A-Za-z0-9_-]+)`)

// TestChatMessageCtrlC (issue 23, item 3): Ctrl-C while `chat -m` waits
// used to end the process silently while the request went on. It must
// stop at once, exit 130 and print the command that awaits the request;
// that command, once a worker runs, prints the answer and the request is
// asked once. A real SIGINT to a real process.
func TestChatMessageCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the turnlog binary")
	}
	bin := buildTurnlog(t)
	e := newAuditEnv(t, false) // no worker: the request waits
	out := &syncbuf.Buffer{}
	chat := exec.Command(bin, "chat", "--nats-url", e.url, "-m", "wait for me", "patient")
	chat.Env = processEnv()
	chat.Stdout, chat.Stderr = out, out
	require.NoError(t, chat.Start())
	done := make(chan error, 1)
	go func() { done <- chat.Wait() }()
	t.Cleanup(func() { _ = chat.Process.Kill() })
	eventually(t, "the request is stored", func() bool { return requestsStored(t, e.log) == 1 })

	require.NoError(t, chat.Process.Signal(syscall.SIGINT))
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("chat did not stop on Ctrl-C:\n%s", out.String())
	}
	assert.Equal(t, 130, chat.ProcessState.ExitCode(), out.String())
	m := awaitCommand.FindStringSubmatch(out.String())
	require.NotNil(t, m, "stderr names the command that awaits the request: %q", out.String())
	assert.Equal(t, "wait for me", m[2])
	assert.Equal(t, "patient", m[3])
	assert.Contains(t, out.String(), "not cancelled", "says what becomes of the request")

	startWorker(t, e.log)
	answer, errOut, code := e.run("", "chat", "--request-id", m[1], "-m", m[2], m[3])
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "You said: wait for me\n", answer)
	assert.Equal(t, 1, usersOf(t, e.log, "patient", m[1]), "asked once")
}

// interactiveChat is `turnlog chat` running in this process with its
// input on a pipe and its Ctrl-C on a channel.
type interactiveChat struct {
	in   *io.PipeWriter
	out  *syncbuf.Buffer
	sig  chan os.Signal
	done chan error
}

func startInteractive(t *testing.T, url string, args ...string) *interactiveChat {
	t.Helper()
	for _, k := range connectionEnv {
		t.Setenv(k, "")
	}
	pr, pw := io.Pipe()
	c := &interactiveChat{in: pw, out: &syncbuf.Buffer{}, sig: make(chan os.Signal, 1), done: make(chan error, 1)}
	root := newRootCmd()
	root.SetIn(pr)
	root.SetOut(c.out)
	root.SetErr(c.out)
	root.SetArgs(append([]string{"chat", "--nats-url", url}, args...))
	ctx, cancel := context.WithCancel(withInterrupts(context.Background(), c.sig))
	go func() { c.done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		pw.Close()
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			t.Error("chat did not end")
		}
	})
	return c
}

func (c *interactiveChat) say(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(t, err)
}

// waitFor waits until the output contains s.
func (c *interactiveChat) waitFor(t *testing.T, s string) {
	t.Helper()
	eventually(t, "the output shows "+s+":\n"+c.out.String(), func() bool { return strings.Contains(c.out.String(), s) })
}

// ended waits for the command to end and returns its error.
func (c *interactiveChat) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(time.Minute):
		t.Fatalf("chat did not end:\n%s", c.out.String())
		return nil
	}
}

// TestInteractiveChatCtrlC (issue 23, item 3): in interactive chat, Ctrl-C
// during a request did nothing until the answer came. It must stop the
// wait at once, name the request and the command that awaits it, and
// return to the prompt, where the conversation goes on; a second Ctrl-C,
// at the prompt, ends chat.
func TestInteractiveChatCtrlC(t *testing.T) {
	e := newAuditEnv(t, false)
	c := startInteractive(t, e.url, "ctrlc")
	c.waitFor(t, "conversation ctrlc")
	c.say(t, "no one answers")
	eventually(t, "the request is stored", func() bool { return requestsStored(t, e.log) == 1 })
	c.sig <- os.Interrupt
	c.waitFor(t, "turnlog chat --request-id ")
	m := awaitCommand.FindStringSubmatch(c.out.String())
	require.NotNil(t, m, c.out.String())
	assert.Equal(t, "no one answers", m[2])
	assert.Equal(t, "ctrlc", m[3])

	startWorker(t, e.log)
	c.say(t, "still here?")
	c.waitFor(t, "You said: still here?")
	// The answer shows before its request ends: a Ctrl-C between the two
	// stops that wait (as the first did) and chat is at the prompt after
	// it, where the next Ctrl-C leaves.
	eventually(t, "a Ctrl-C at the prompt leaves chat:\n"+c.out.String(), func() bool {
		select {
		case c.sig <- os.Interrupt:
		default:
		}
		select {
		case err := <-c.done:
			c.done <- err
			return true
		case <-time.After(500 * time.Millisecond):
			return false
		}
	})
	assert.NoError(t, c.ended(t), "a Ctrl-C at the prompt leaves chat")
	assert.Equal(t, 1, usersOf(t, e.log, "ctrlc", m[1]), "the interrupted request was not cancelled: the worker took it")
}

// TestInteractiveChatShowsToolCalls (issue 23, item 3): tool calls were
// invisible in interactive chat; it shows each call's name and arguments,
// then its result, before the answer, as the console does.
func TestInteractiveChatShowsToolCalls(t *testing.T) {
	e := newAuditEnv(t, true)
	c := startInteractive(t, e.url, "tools")
	c.say(t, "count the words in a b c")
	c.say(t, "/quit")
	require.NoError(t, c.ended(t))
	out := c.out.String()
	call := strings.Index(out, `tool call word_count({"text": "a b c"})`)
	result := strings.Index(out, "tool result 3\n")
	answer := strings.Index(out, `There are 3 words in "a b c".`)
	require.NotEqual(t, -1, call, out)
	require.NotEqual(t, -1, result, out)
	require.NotEqual(t, -1, answer, out)
	assert.Less(t, call, result, "the call, then its result:\n%s", out)
	assert.Less(t, result, answer, "the result, then the answer that follows from it:\n%s", out)
}

// TestChatSaysItWaitsForNATS (issue 23, item 3): a message typed while the
// server is down sat with no output; after 2 s without NATS chat says that
// it waits for the server, and the request is answered once it is back.
func TestChatSaysItWaitsForNATS(t *testing.T) {
	srv := natstest.Start(t)
	dir, url := srv.Dir, srv.ClientURL()
	_, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	c := startInteractive(t, url, "outage")
	c.waitFor(t, "conversation outage")
	srv.Stop()

	c.say(t, "are you there?")
	c.waitFor(t, "waiting for NATS at "+url)

	host, port, err := net.SplitHostPort(strings.TrimPrefix(url, "nats://"))
	require.NoError(t, err)
	back, err := embedded.Start(embedded.Config{DataDir: dir, Listen: net.JoinHostPort(host, port)})
	require.NoError(t, err)
	t.Cleanup(back.Shutdown)
	nc, err := back.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	l, err := eventlog.Open(context.Background(), nc)
	require.NoError(t, err)
	startWorker(t, l)
	c.waitFor(t, "You said: are you there?")
	c.say(t, "/quit")
	assert.NoError(t, c.ended(t))
	assert.False(t, errors.Is(c.ended(t), context.Canceled))
}
