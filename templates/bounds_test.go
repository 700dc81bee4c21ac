package templates_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "github.com/turnlog/turnlog/engine/builtin" // every provider: the tests use scripted and openai
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/templates"
	"github.com/turnlog/turnlog/worker"
)

// startWorker runs a worker with the scripted provider and the template
// middleware on a fresh installation, and returns its log and template
// store.
func startWorker(t *testing.T) (*eventlog.Log, *templates.Store) {
	t.Helper()
	ctx := context.Background()
	srv := natstest.Start(t)
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	profiles := profile.Set{profile.DefaultName: {Middlewares: []string{"template"}}}
	w, err := worker.New(worker.Config{Log: l, Conn: srv.Conn, Profiles: profiles, AckWait: 5 * time.Second, ShutdownGrace: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done })
	return l, templates.New(l)
}

// chat sends one request with cwd as its "cwd" data and waits for its end.
func chat(t *testing.T, l *eventlog.Log, conv, cwd string) (worker.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: "hello", Data: map[string]string{middlewares.DataCwd: cwd}})
	require.NoError(t, err)
	return worker.Await(ctx, l, conv, req.RequestID, turn.Seq, turn.Events)
}

// TestChatCannotReadKernelFiles is issue 15's reproduction through a
// worker: the template [file:cmdline] [file:environ] and a chat request
// whose data say cwd=/proc/self put the worker's command line (with
// serve's --token) and its environment into the system prompt, readable
// by anyone who could read the conversation.
func TestChatCannotReadKernelFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	l, store := startWorker(t)
	_, err := store.SetGlobal(context.Background(), "Leak: <[file:cmdline]> <[file:environ]>")
	require.NoError(t, err)

	res, err := chat(t, l, "leak", "/proc/self")
	require.NoError(t, err)
	var set *events.SystemPromptSet
	for _, r := range res.Events {
		if p, ok := r.Payload.(events.SystemPromptSet); ok {
			set = &p
		}
	}
	require.NotNil(t, set, "the conversation got its prompt")
	assert.Equal(t, "Leak: <> <>", set.Text)
	assert.NotContains(t, set.Text, filepath.Base(os.Args[0]), "the command line")
	assert.NotContains(t, set.Text, "PATH=", "the environment")
	assert.Empty(t, set.Variables["file:cmdline"])
	assert.Empty(t, set.Variables["file:environ"])
}

// TestChatPromptIsCapped is the reproduction of the rendering blow-up: a
// 56 KB template '[file:big.txt]' x 4000 with a 56 KB big.txt rendered a
// 224 MB prompt (~2.6 GB per request). The request now fails at once with
// a reason naming the cap and the variable, and the conversation records
// no prompt.
func TestChatPromptIsCapped(t *testing.T) {
	l, store := startWorker(t)
	cwd := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "big.txt"), []byte(strings.Repeat("x", 56<<10)), 0o600))
	_, err := store.SetGlobal(context.Background(), strings.Repeat("[file:big.txt]", 4000))
	require.NoError(t, err)

	res, err := chat(t, l, "big", cwd)
	require.ErrorIs(t, err, worker.ErrFailed)
	assert.Contains(t, res.Failed, "[file:big.txt]", "the reason names the variable")
	assert.Contains(t, res.Failed, "262144", "and the cap")
	assert.Contains(t, res.Failed, "max_prompt_bytes", "and the setting that raises it")
	for _, r := range res.Events {
		_, isSet := r.Payload.(events.SystemPromptSet)
		assert.False(t, isSet, "no prompt recorded")
	}
	assert.False(t, errors.Is(err, context.DeadlineExceeded))
}
