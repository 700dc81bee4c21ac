package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestACallCutByShutdownSaysSo: stopping serve (or turnlog gateway) gives
// the calls in flight a grace period, then closes their connections. A
// stream still running then was recorded as failed because "the client
// disconnected before the response ended": the record blamed the app for
// what turnlog did (found by an adopter probe). Once the gateway is
// stopping, a call cut that way says the gateway was shutting down.
func TestACallCutByShutdownSaysSo(t *testing.T) {
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Once upon"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-held:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(up.Close)
	s := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: s.Conn.IsConnected, Token: token, OpenAIUpstream: up.URL + "/v1"})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ran := make(chan struct{})
	go func() { g.Run(ctx); close(ran) }()
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)

	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"a long story"}]}`))
	req.Header.Set("Turnlog-Token", token)
	req.Header.Set("Turnlog-Conversation", "story")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, 10)
	_, err = io.ReadAtLeast(resp.Body, buf, 5)
	require.NoError(t, err, "the stream has begun")

	stop()                      // serve's Ctrl-C: the gateway is stopping
	<-ran                       // Run has returned: the gateway knows it is stopping
	hs.CloseClientConnections() // the grace is over: the connections are closed
	rig := &rig{srv: s, log: l}
	require.Eventually(t, func() bool { _, _, f := inferences(t, rig, "story"); return len(f) == 1 }, 10*time.Second, 20*time.Millisecond)
	_, _, failed := inferences(t, rig, "story")
	assert.Contains(t, failed[0], "shutting down")
	assert.False(t, strings.HasPrefix(failed[0], "the client disconnected"), "%s", failed[0])
}
