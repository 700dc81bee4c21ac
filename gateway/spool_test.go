package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// cuttable is a gateway whose NATS connection goes through a proxy the
// test can cut and restore: NATS unreachable, then back, the server and
// its data untouched.
type cuttable struct {
	proxy *toxiproxy.Proxy
	nc    *nats.Conn
	gw    *httptest.Server
	spool string
	srv   *natstest.Server
	logs  *syncbuf.Buffer // the gateway's log
}

func newCuttable(t *testing.T, upstream string, spoolBytes int64, opts ...rigOption) *cuttable {
	t.Helper()
	s := natstest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(api, "nats", addr, strings.TrimPrefix(s.ClientURL(), "nats://"))
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	nc, err := nats.Connect("nats://"+addr, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, nc)
	require.NoError(t, err)
	threads, err := l.Threads(ctx)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "spool")
	logs := &syncbuf.Buffer{}
	cfg := gateway.Config{Log: l, Connected: nc.IsConnected, Token: token, OpenAIUpstream: upstream + "/v1",
		Threads: threads, RecordOptional: true, SpoolDir: dir, SpoolBytes: spoolBytes, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	g, err := gateway.New(cfg)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { g.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	return &cuttable{proxy: p, nc: nc, gw: hs, spool: dir, srv: s, logs: logs}
}

func (c *cuttable) cut(t *testing.T) {
	c.proxy.Stop()
	require.Eventually(t, func() bool { return !c.nc.IsConnected() }, 10*time.Second, 10*time.Millisecond)
}

func (c *cuttable) restore(t *testing.T) {
	require.NoError(t, c.proxy.Start())
	require.Eventually(t, c.nc.IsConnected, 10*time.Second, 10*time.Millisecond)
}

// spooled counts the calls in the spool, those being recorded too (a
// call's file is renamed *.recording while it is): a test that waits for
// none reads the log once the last call is in it.
func spooled(t *testing.T, dir string) int {
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if name := e.Name(); strings.HasSuffix(name, ".call") || strings.HasSuffix(name, ".call.recording") {
			n++
		}
	}
	return n
}

func TestRecordOptionalSpoolsWhileNATSIsDown(t *testing.T) {
	up := newChatUpstream(t, "")
	c := newCuttable(t, up.URL, 1<<20)
	h := map[string]string{"Turnlog-Token": token}
	first := `{"role":"system","content":"s"},{"role":"user","content":"weather?"}`
	resp, body := post(t, c.gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[`+first+`]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	conv := resp.Header.Get("Turnlog-Conversation")

	c.cut(t)
	before := time.Now()
	a1 := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null,"annotations":[]}`
	resp, body = post(t, c.gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[`+first+`,`+a1+`,{"role":"tool","tool_call_id":"call_1","content":"sunny"}]}`)
	require.Equal(t, 200, resp.StatusCode, "NATS is down, and the call is forwarded all the same: %s", body)
	assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "threaded by what this gateway recorded")
	resp, body = post(t, c.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "named"},
		fmt.Sprintf(chatBody, "while down"))
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	resp, body = post(t, c.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "streamed"},
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "data: ")
	assert.Equal(t, 3, spooled(t, c.spool), "the calls wait in the spool")
	// An operator reads that calls are being spooled, once an outage.
	assert.Equal(t, 1, strings.Count(c.logs.String(), "NATS is unreachable: calls are forwarded and kept in the spool"), "%s", c.logs)

	c.restore(t)
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 0 }, 20*time.Second, 20*time.Millisecond, "the spool drains once NATS is back")
	require.Eventually(t, func() bool {
		return strings.Contains(c.logs.String(), "recorded the calls spooled while NATS was away")
	}, 10*time.Second, 20*time.Millisecond, "%s", c.logs)
	assert.Contains(t, c.logs.String(), "calls=3")
	l, err := eventlog.Open(context.Background(), c.srv.Conn)
	require.NoError(t, err)
	for _, cv := range []string{conv, "named", "streamed"} {
		verify(t, l, cv)
	}
	var started []events.Event
	for _, e := range conversationEvents(t, l, conv) {
		if _, ok := e.Payload.(events.InferenceStarted); ok {
			started = append(started, e)
		}
	}
	require.Len(t, started, 2, "the call made while NATS was down is in its conversation")
	assert.WithinDuration(t, before, started[1].Time, 2*time.Second, "recorded at the time it was made")
	assert.Equal(t, "inferred", started[1].Payload.(events.InferenceStarted).Gateway["threading"])
	for _, cv := range []string{"named", "streamed"} {
		_, finished, failed := inferences(t, &rig{log: l}, cv)
		assert.Equal(t, 1, finished, cv)
		assert.Empty(t, failed, cv)
	}
}

func TestRecordOptionalFullSpoolAnswers503(t *testing.T) {
	up := newChatUpstream(t, "")
	// Room for one small call's reservation (twice its body and 4 KiB),
	// not for a second one beside the first's file.
	c := newCuttable(t, up.URL, 5000)
	c.cut(t)
	h := map[string]string{"Turnlog-Token": token}
	resp, body := post(t, c.gw.URL+"/v1/chat/completions", h, fmt.Sprintf(chatBody, "fits"))
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	resp, body = post(t, c.gw.URL+"/v1/chat/completions", h, fmt.Sprintf(chatBody, "does not fit"))
	assert.Equal(t, 503, resp.StatusCode)
	assert.Contains(t, string(body), "spool")
	assert.Regexp(t, `of --spool-bytes 5000 used; this call needs \d+\)`, string(body), "says what the call needed, not only what is used")
	assert.Equal(t, 1, up.calls(), "the refused call was not forwarded")
}

// A call the gateway spooled while NATS was away is not recorded into its
// conversation when the conversation was erased after the call was made
// (it was: the erased conversation got the call back when NATS returned);
// one made after the erasure is.
func TestSpooledCallOfAnErasedConversationIsNotRecorded(t *testing.T) {
	up := newChatUpstream(t, "")
	c := newCuttable(t, up.URL, 1<<20)
	named := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "secret"}
	c.cut(t)
	resp, body := post(t, c.gw.URL+"/v1/chat/completions", named, fmt.Sprintf(chatBody, "my account number is 42"))
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	require.Equal(t, 1, spooled(t, c.spool))

	// Erased by an operator, on the server the gateway cannot reach.
	ctx := context.Background()
	l, err := eventlog.Open(ctx, c.srv.Conn)
	require.NoError(t, err)
	_, err = l.Erase(ctx, "secret")
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond) // a call after the erasure, on the same clock
	resp, body = post(t, c.gw.URL+"/v1/chat/completions", named, fmt.Sprintf(chatBody, "a new start"))
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	require.Equal(t, 2, spooled(t, c.spool))

	c.restore(t)
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 0 }, 20*time.Second, 20*time.Millisecond, "the spool drains once NATS is back")
	var texts []string
	for _, e := range conversationEvents(t, l, "secret") {
		if p, ok := e.Payload.(events.UserAppended); ok {
			texts = append(texts, p.Text)
		}
	}
	assert.Equal(t, []string{"a new start"}, texts, "only the call made after the erasure")
	verify(t, l, "secret")
}

// TestSpooledCallTooCostlyToReadIsRecordedByItsHash: --max-inflight-bytes
// bounds what reading calls into blocks takes, and a call that would
// take more than all of it is recorded by its hash. A call spooled while
// NATS was away was read whole all the same, when it was spooled and
// again when it was recorded (a 27 MB body of tiny messages: 2 GB).
func TestSpooledCallTooCostlyToReadIsRecordedByItsHash(t *testing.T) {
	up := newChatUpstream(t, "")
	c := newCuttable(t, up.URL, 4<<20, func(cfg *gateway.Config) { cfg.MaxBody, cfg.MaxInFlightBytes = 64<<10, 1<<20 })
	c.cut(t)
	msgs := strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"x"},`, 1500), ",")
	resp, body := post(t, c.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "costly"},
		`{"model":"m","messages":[`+msgs+`]}`)
	require.Equal(t, 200, resp.StatusCode, "forwarded while NATS is away: %s", body)
	c.restore(t)
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 0 }, 20*time.Second, 20*time.Millisecond, "the spool drains")

	l, err := eventlog.Open(context.Background(), c.srv.Conn)
	require.NoError(t, err)
	started := startedOf(t, l, "costly")
	require.Len(t, started, 1)
	assert.Contains(t, started[0].Gateway["unparsed"], "more than --max-inflight-bytes (1 MiB); recorded by the hash of its bytes alone")
	assert.NotEmpty(t, started[0].Gateway["wire_sha256"], "by its hash")
	turn, err := l.Load(t.Context(), "costly")
	require.NoError(t, err)
	for _, b := range turn.Blocks {
		assert.NotEqual(t, events.KindUser, b.Kind, "none of its messages read into blocks")
	}
}

// TestSpoolRemovesWhatADeadWriterLeft: a gateway killed while it wrote a
// spool file left its temporary file (.tmp-*) behind, never removed nor
// counted: disk the spool's bound did not see. The gateway that opens
// the spool next holds its lock, so no writer of those files is alive:
// it removes them.
func TestSpoolRemovesWhatADeadWriterLeft(t *testing.T) {
	up := newChatUpstream(t, "")
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	left := filepath.Join(dir, ".tmp-1234567")
	require.NoError(t, os.WriteFile(left, []byte(`{"api":"chat.completions","request":`), 0o600))
	newCuttable(t, up.URL, 1<<20, func(c *gateway.Config) { c.SpoolDir = dir })
	_, err := os.Stat(left)
	assert.True(t, os.IsNotExist(err), "the dead writer's file is removed: %v", err)
}
