package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
)

// A gateway killed while a call it forwarded with NATS away is at the
// provider leaves the call in its spool, and the next gateway on that
// spool records it as failed, saying the gateway stopped before it kept
// the answer (as a live call left open is closed as abandoned). Nothing
// of such a call was written before its answer: the provider did it, the
// app got a broken connection, and no record, file or metric held it.
func TestSpooledCallOfAKilledGatewayIsRecordedFailed(t *testing.T) {
	up, release := heldUpstream(t)
	c := newCuttable(t, up.URL, 1<<20)
	t.Cleanup(func() { close(release) }) // before the gateway's server closes, which waits for the call
	c.cut(t)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, c.gw.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, "while down")))
		req.Header.Set("Turnlog-Token", token)
		req.Header.Set("Turnlog-Conversation", "killed")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	var files []string
	require.Eventually(t, func() bool {
		files, _ = filepath.Glob(filepath.Join(c.spool, "*.call"))
		return len(files) == 1
	}, 5*time.Second, 10*time.Millisecond, "the call has its file before it is at the provider")
	kept, err := os.ReadFile(files[0])
	require.NoError(t, err)

	// The kill: what the disk holds is all that is left. Another
	// gateway opens that spool, NATS up.
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(files[0])), kept, 0o600))
	l, err := eventlog.Open(t.Context(), c.srv.Conn)
	require.NoError(t, err)
	threads, err := l.Threads(t.Context())
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: c.srv.Conn.IsConnected, Token: token, OpenAIUpstream: up.URL + "/v1",
		Threads: threads, RecordOptional: true, SpoolDir: dir, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Eventually(t, func() bool { return spooled(t, dir) == 0 }, 20*time.Second, 20*time.Millisecond, "recorded")
	started, finished, failed := inferences(t, &rig{log: l}, "killed")
	require.Len(t, started, 1, "the call is in the log")
	assert.Equal(t, 0, finished)
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], "the gateway stopped before it kept the call's answer")
	verify(t, l, "killed")
}

// A call that cannot have its file in the spool (a full or failed disk)
// while NATS is away is refused before it is forwarded: 503, and the
// provider does nothing of it.
func TestSpooledCallTheDiskRefusesIsNotForwarded(t *testing.T) {
	up := newChatUpstream(t, "")
	c := newCuttable(t, up.URL, 1<<20)
	c.cut(t)
	require.NoError(t, os.RemoveAll(c.spool)) // the disk lost it: nothing can be written there
	resp, body := post(t, c.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, fmt.Sprintf(chatBody, "while down"))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "keep the call in the spool")
	assert.Equal(t, 0, up.calls(), "not forwarded")
	_, err := os.Stat(c.spool)
	assert.True(t, os.IsNotExist(err))
}
