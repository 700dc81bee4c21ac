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
	up, release := heldUpstream(t)
	l, err := eventlog.Open(t.Context(), natstest.Start(t).Conn)
	require.NoError(t, err)
	threads, err := l.Threads(t.Context())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "spool")
	down := func() bool { return false }
	g, err := gateway.New(gateway.Config{Log: l, Connected: down, Token: token, OpenAIUpstream: up.URL + "/v1",
		Threads: threads, RecordOptional: true, SpoolDir: dir, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	hs := httptest.NewServer(g)
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, "in flight")))
		req.Header.Set("Turnlog-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	require.Eventually(t, func() bool { return spooled(t, dir) == 1 }, 5*time.Second, 10*time.Millisecond)

	cancel() // the gateway stops; its server still ends the call in flight
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	_, err = gateway.New(gateway.Config{Log: l, Connected: down, Token: token, OpenAIUpstream: up.URL + "/v1",
		Threads: threads, RecordOptional: true, SpoolDir: dir, Logger: slog.New(slog.DiscardHandler)})
	assert.ErrorContains(t, err, "in use by another gateway", "the spool is still the stopping gateway's")

	close(release)
	assert.Equal(t, http.StatusOK, <-answered)
	hs.Close()
	<-done
	g2, err := gateway.New(gateway.Config{Log: l, Connected: down, Token: token, OpenAIUpstream: up.URL + "/v1",
		Threads: threads, RecordOptional: true, SpoolDir: dir, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err, "the spool is free once the call's file is whole")
	_ = g2
}

// A gateway that stops while a spooled call is at the provider answers
// the calls that come meanwhile 503, as docs/gateway.md says: taken in,
// each would be forwarded by a gateway that is stopping and hold its
// spool's lock for as long as it ran, so that under steady traffic a
// stopping gateway never let its spool go.
func TestStoppingGatewayRefusesCallsWhileItWaitsForItsCallsInFlight(t *testing.T) {
	up, release := heldUpstream(t)
	l, err := eventlog.Open(t.Context(), natstest.Start(t).Conn)
	require.NoError(t, err)
	threads, err := l.Threads(t.Context())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "spool")
	down := func() bool { return false }
	g, err := gateway.New(gateway.Config{Log: l, Connected: down, Token: token, OpenAIUpstream: up.URL + "/v1",
		Threads: threads, RecordOptional: true, SpoolDir: dir, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	hs := httptest.NewServer(g)
	defer hs.Close()
	post := func(text string) int {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, text)))
		req.Header.Set("Turnlog-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	first := make(chan int, 1)
	go func() { first <- post("in flight") }()
	require.Eventually(t, func() bool { return spooled(t, dir) == 1 }, 5*time.Second, 10*time.Millisecond)

	cancel() // the gateway stops; it waits for the call in flight
	select {
	case <-done:
		t.Fatal("Run returned with a spooled call in flight")
	case <-time.After(100 * time.Millisecond):
	}
	later := make(chan int, 1)
	go func() { later <- post("while stopping") }()
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
