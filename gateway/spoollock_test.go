package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// A gateway that stops (its Run ends) while a call it spooled is still at
// the provider keeps its spool locked until that call's file is whole:
// its HTTP server ends the call after Run, and a gateway opening the
// spool meanwhile would take the call's provisional file for a dead
// gateway's and record it failed, while the call's answer reaches its
// client and its file.
func TestStoppingGatewayKeepsItsSpoolWhileACallIsInFlight(t *testing.T) {
	sg := startSpoolingGateway(t)
	hs, dir, cancel, done, release := sg.hs, sg.dir, sg.cancel, sg.done, sg.release
	answered := make(chan int, 1)
	go func() { answered <- sg.post("in flight") }()
	require.Eventually(t, func() bool { return spooled(t, dir) == 1 }, 5*time.Second, 10*time.Millisecond)

	cancel() // the gateway stops; its server still ends the call in flight
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	_, err := sg.another()
	assert.ErrorContains(t, err, "in use by another gateway", "the spool is still the stopping gateway's")

	close(release)
	assert.Equal(t, http.StatusOK, <-answered)
	hs.Close()
	<-done
	_, err = sg.another()
	require.NoError(t, err, "the spool is free once the call's file is whole")
}

// A gateway that stops while a spooled call is at the provider answers
// the calls that come meanwhile 503, as docs/gateway.md says: taken in,
// each would be forwarded by a gateway that is stopping and hold its
// spool's lock for as long as it ran, so that under steady traffic a
// stopping gateway never let its spool go.
func TestStoppingGatewayRefusesCallsWhileItWaitsForItsCallsInFlight(t *testing.T) {
	sg := startSpoolingGateway(t)
	hs, dir, cancel, done, release := sg.hs, sg.dir, sg.cancel, sg.done, sg.release
	defer hs.Close()
	first := make(chan int, 1)
	go func() { first <- sg.post("in flight") }()
	require.Eventually(t, func() bool { return spooled(t, dir) == 1 }, 5*time.Second, 10*time.Millisecond)

	cancel() // the gateway stops; it waits for the call in flight
	select {
	case <-done:
		t.Fatal("Run returned with a spooled call in flight")
	case <-time.After(100 * time.Millisecond):
	}
	later := make(chan int, 1)
	go func() { later <- sg.post("while stopping") }()
	select {
	case status := <-later:
		assert.Equal(t, http.StatusServiceUnavailable, status, "a call that comes while the gateway stops")
	case <-time.After(2 * time.Second):
		t.Error("a call that came while the gateway stopped was forwarded (it waits at the provider), not answered 503")
	}
	assert.Equal(t, 1, spooled(t, dir), "only the call in flight before the stop is in the spool")

	close(release)
	assert.Equal(t, http.StatusOK, <-first)
	<-done
}

// spoolingGateway is a running gateway that spools every call (NATS is
// reported down) into dir, forwarding them to an upstream that holds
// every call until release is closed; cancel stops its Run, and done is
// closed when Run returned.
type spoolingGateway struct {
	hs      *httptest.Server
	dir     string
	cancel  context.CancelFunc
	done    chan struct{}
	release chan struct{}
	another func() (*gateway.Gateway, error) // a second gateway on dir
}

func startSpoolingGateway(t *testing.T) *spoolingGateway {
	t.Helper()
	up, release := heldUpstream(t)
	l, err := eventlog.Open(t.Context(), natstest.Start(t).Conn)
	require.NoError(t, err)
	threads, err := l.Threads(t.Context())
	require.NoError(t, err)
	sg := &spoolingGateway{dir: filepath.Join(t.TempDir(), "spool"), done: make(chan struct{}), release: release}
	sg.another = func() (*gateway.Gateway, error) {
		return gateway.New(gateway.Config{Log: l, Connected: func() bool { return false }, Token: token, OpenAIUpstream: up.URL + "/v1",
			Threads: threads, RecordOptional: true, SpoolDir: sg.dir, Logger: slog.New(slog.DiscardHandler)})
	}
	g, err := sg.another()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	sg.cancel = cancel
	go func() { defer close(sg.done); g.Run(ctx) }()
	sg.hs = httptest.NewServer(g)
	return sg
}

// post sends a chat call through the gateway and returns its status (0:
// no answer).
func (sg *spoolingGateway) post(text string) int {
	req, _ := http.NewRequest(http.MethodPost, sg.hs.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, text)))
	req.Header.Set("Turnlog-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
