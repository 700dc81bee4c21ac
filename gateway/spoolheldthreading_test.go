package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
)

// NATS back, a damaged conversation's spooled call waiting for its
// repair: the gateway's other calls are threaded as when NATS is up, by
// the installation's threading index, not by what this gateway alone
// recorded (a call continuing another gateway's conversation continues
// it).
func TestHeldSpooledCallLeavesOtherCallsThreadedByTheIndex(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last := "one"
		for _, q := range []string{"two", "elsewhere", "and here"} {
			if strings.Contains(string(b), q) {
				last = q
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer("re "+last))
	}))
	t.Cleanup(up.Close)
	c := newCuttable(t, up.URL, 1<<20)
	l, hs := holdADamagedCall(t, c, up.URL)
	first := `{"model":"gpt-test","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"elsewhere"}]}`
	resp, _ := postOK(t, hs.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, first)
	conv := resp.Header.Get("Turnlog-Conversation")
	require.NotEmpty(t, conv)

	// Its next call comes through this gateway.
	next := `{"model":"gpt-test","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"elsewhere"},{"role":"assistant","content":"re elsewhere"},{"role":"user","content":"and here"}]}`
	resp, _ = postOK(t, c.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, next)
	assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "the call continues the conversation it continues")
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 1 }, 20*time.Second, 20*time.Millisecond, "recorded but the damaged conversation's call")
	started, finished, _ := inferences(t, &rig{log: l}, conv)
	assert.Len(t, started, 2)
	assert.Equal(t, 2, finished)
	assert.Empty(t, checkRules(t, l, conv))
}

// holdADamagedCall has c's gateway spool a call of a conversation that
// is damaged once NATS is back (a message it cannot read), so that the
// call waits in the spool for its repair while NATS is up, and starts
// another gateway on the same log with NATS up; it returns the log and
// the other gateway's server.
func holdADamagedCall(t *testing.T, c *cuttable, upstream string) (*eventlog.Log, *httptest.Server) {
	t.Helper()
	spoiled := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "spoiled"}
	postOK(t, c.gw.URL+"/v1/chat/completions", spoiled, fmt.Sprintf(chatBody, "one"))
	c.cut(t)
	postOK(t, c.gw.URL+"/v1/chat/completions", spoiled, fmt.Sprintf(chatBody, "two"))
	ctx := context.Background()
	l, err := eventlog.Open(ctx, c.srv.Conn)
	require.NoError(t, err)
	_, err = l.JetStream().Publish(ctx, l.Names().EventsSubject("spoiled"), []byte("garbage"), jetstream.WithMsgID("damaged:1"))
	require.NoError(t, err)
	c.restore(t)
	require.Eventually(t, func() bool {
		return strings.Contains(c.logs.String(), "waits in the spool until its conversation is repaired")
	}, 20*time.Second, 20*time.Millisecond)

	threads, err := l.Threads(ctx)
	require.NoError(t, err)
	other, err := gateway.New(gateway.Config{Log: l, Connected: c.srv.Conn.IsConnected, Token: token, OpenAIUpstream: upstream + "/v1",
		Threads: threads, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	hs := httptest.NewServer(other)
	t.Cleanup(hs.Close)
	return l, hs
}
