package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// hungStore is the threading index on a NATS server that answers
// nothing: every read and write waits until its context ends (or the
// test does). entered is told of each read.
type hungStore struct {
	entered chan struct{}
	done    chan struct{}
}

func (h hungStore) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-h.done:
		return context.Canceled
	}
}

func (h hungStore) Get(ctx context.Context, key string) (string, bool, error) {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	return "", false, h.wait(ctx)
}

func (h hungStore) Put(ctx context.Context, pairs map[string]string) error { return h.wait(ctx) }

// TestSpoolLookupEndsWhenTheGatewayStops: a call taken into the spool
// while calls wait there, NATS being back, has its conversation asked of
// the installation's threading index. That lookup ran with
// context.Background(): on a NATS server that answers nothing it waited
// for ever, and so did the call, and the gateway's HTTP server stopping
// after it. It now ends when the gateway stops (or at a time limit), and
// the call is answered.
func TestSpoolLookupEndsWhenTheGatewayStops(t *testing.T) {
	l, err := eventlog.Open(t.Context(), natstest.Start(t).Conn)
	require.NoError(t, err)
	store := hungStore{entered: make(chan struct{}, 1), done: make(chan struct{})}
	t.Cleanup(func() { close(store.done) })
	var connected atomic.Bool
	g, err := gateway.New(gateway.Config{Log: l, Connected: connected.Load, Token: token,
		OpenAIUpstream: newFixedUpstream(t, chatAnswer("ok")).URL + "/v1", Threads: store, RecordOptional: true,
		SpoolDir: filepath.Join(t.TempDir(), "spool"), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	hs := httptest.NewServer(g)

	// NATS away: a call is spooled.
	resp, out := post(t, hs.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, fmt.Sprintf(chatBody, "first"))
	require.Equal(t, 200, resp.StatusCode, "%s", out)

	// NATS back, but not answering; the next call, going on from an
	// answer this gateway does not know, waits behind the spooled one,
	// and its conversation is asked of the shared index.
	connected.Store(true)
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"elsewhere"},{"role":"assistant","content":"answered by another gateway"},{"role":"user","content":"go on"}]}`))
		req.Header.Set("Turnlog-Token", token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case <-store.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the spooled call did not ask the shared index")
	}

	// The gateway stops.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := make(chan struct{})
	go func() { g.Run(ctx); close(ran) }()
	select {
	case code := <-answered:
		assert.Positive(t, code, "the call is answered")
	case <-time.After(5 * time.Second):
		t.Fatal("a call still waits on the threading index 5s after the gateway stopped")
	}
	hs.Close()
	<-ran
}
