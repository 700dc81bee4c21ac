package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// smallPayload is the NATS server's largest message in these tests: a
// step past it is refused whole (eventlog.ErrTooLarge), as a 9 MiB message
// is by the embedded server's 8 MiB.
const smallPayload = 64 << 10

// newSmallRig is newRig on a server whose messages are at most
// smallPayload bytes.
func newSmallRig(t *testing.T, openai string) (*rig, *gateway.Metrics) {
	t.Helper()
	s := natstest.Start(t, natstest.WithMaxPayload(smallPayload))
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	wire := &wireLog{next: http.DefaultTransport}
	m := gateway.NewMetrics()
	g, err := gateway.New(gateway.Config{Log: l, Connected: s.Conn.IsConnected, Token: token, OpenAIUpstream: openai + "/v1",
		Transport: wire, Metrics: m})
	require.NoError(t, err)
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	return &rig{srv: s, log: l, gw: hs, wire: wire}, m
}

// TestContentTooLargeToStoreStillAnswers: a call whose new message, or
// whose answer, is larger than a NATS message can hold was forwarded, and
// then the client got an empty reply (its response cut, as when NATS is
// lost) and the log held nothing of it. The app must get the upstream's
// answer, and the log the call: its input by its hash alone, as an
// unparsed call saying why; an answer too large as a failure saying so.
func TestContentTooLargeToStoreStillAnswers(t *testing.T) {
	big := strings.Repeat("x", 2*smallPayload)
	for _, tc := range []struct {
		name, message, answer string
		unparsed, failed      string // what the log says, "" for nothing
		finished              int
		metric                string
	}{
		{name: "a message too large", message: big, answer: "ok", unparsed: "too large to store", finished: 1,
			metric: `turnlog_gateway_unstored_total{part="input"} 1`},
		{name: "an answer too large", message: "hi", answer: big, failed: "too large to store",
			metric: `turnlog_gateway_unstored_total{part="output"} 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFixedUpstream(t, chatAnswer(tc.answer))
			r, m := newSmallRig(t, up.URL)
			conv := "large-" + map[bool]string{true: "in", false: "out"}[tc.unparsed != ""]
			body := fmt.Sprintf(chatBody, tc.message)
			resp, got := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}, body)
			require.Equal(t, 200, resp.StatusCode, "%s", got)
			assert.True(t, chatAnswer(tc.answer) == string(got), "the app gets the upstream's answer whole: got %d bytes, want %d", len(got), len(chatAnswer(tc.answer)))
			r.wire.mu.Lock()
			assert.Equal(t, sum([]byte(body)), r.wire.sent[len(r.wire.sent)-1], "forwarded byte for byte")
			r.wire.mu.Unlock()

			started, finished, failed := inferences(t, r, conv)
			require.Len(t, started, 1, "the call is in the log")
			assert.Equal(t, sum([]byte(body)), started[0].Gateway["wire_sha256"])
			if tc.unparsed != "" {
				assert.Contains(t, started[0].Gateway["unparsed"], tc.unparsed)
			} else {
				assert.Empty(t, started[0].Gateway["unparsed"])
			}
			assert.Equal(t, tc.finished, finished)
			if tc.failed != "" {
				require.Len(t, failed, 1)
				assert.Contains(t, failed[0], tc.failed)
			} else {
				assert.Empty(t, failed)
			}
			verify(t, r.log, conv)
			assert.Contains(t, scrape(t, m), tc.metric)
		})
	}
}
