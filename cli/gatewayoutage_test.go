package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestGatewayOutcomeNotStoredAfterItsResponseWasCut: NATS lost while the
// upstream works. The gateway cuts the response, since it cannot record
// the answer, and the log must then not hold that answer: the app got
// none, and retries. The gateway's connection kept the outcome's append
// in its reconnect buffer: the response was cut only after the append's
// 30 s timeout, and the buffered append was stored once NATS came back,
// so the log said the app got an answer it never got (and the gateway's
// log said the call was not recorded).
func TestGatewayOutcomeNotStoredAfterItsResponseWasCut(t *testing.T) {
	s := natstest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	proxy := toxiproxy.NewProxy(toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop()),
		"nats", addr, strings.TrimPrefix(s.ClientURL(), "nats://"))
	require.NoError(t, proxy.Start())
	t.Cleanup(proxy.Stop)

	answer := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-answer
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() {
		select {
		case <-answer:
		default:
			close(answer)
		}
	})

	const tok = "tl-outage-token-0123456789"
	t.Setenv("TURNLOG_TOKEN", tok) // read as --token's default
	base, out, _ := runGatewayCmd(t, "--data", t.TempDir(), "--nats-url", "nats://"+addr, "--openai-upstream", up.URL+"/v1")

	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	of := func(conv string) (started, finished int) {
		for r, err := range l.Events(context.Background(), conv) {
			require.NoError(t, err)
			switch r.Event.Payload.(type) {
			case events.InferenceStarted:
				started++
			case events.InferenceFinished:
				finished++
			}
		}
		return started, finished
	}

	type result struct {
		status int
		err    error
		at     time.Time
	}
	res := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Turnlog-Token", tok)
		req.Header.Set("Turnlog-Conversation", "cut")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			res <- result{err: err, at: time.Now()}
			return
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{status: resp.StatusCode, err: err, at: time.Now()}
	}()
	require.Eventually(t, func() bool { started, _ := of("cut"); return started == 1 }, 20*time.Second, 20*time.Millisecond, "the call's input is recorded while the upstream works")

	proxy.Stop() // NATS lost
	time.Sleep(200 * time.Millisecond)
	answered := time.Now()
	close(answer)
	r := <-res
	assert.True(t, r.err != nil || r.status != http.StatusOK, "the app does not get the whole answer: status %d", r.status)
	assert.Less(t, r.at.Sub(answered), 10*time.Second, "the response is cut once the record is refused, not after the append's timeout")
	assert.Contains(t, out.String(), "NATS is unreachable", "the log says why")

	require.NoError(t, proxy.Start()) // NATS back
	time.Sleep(4 * time.Second)       // the gateway reconnects (every 2 s) and flushes what it buffered
	_, finished := of("cut")
	assert.Equal(t, 0, finished, "an answer the app never got is not in the log:\n%s", out)
}
