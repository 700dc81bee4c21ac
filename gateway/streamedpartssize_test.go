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

// TestStreamedContentPartsOfSeveralChoicesKeepTheAnswer: a server that
// streams content as parts (Mistral's reasoning models: a "thinking"
// part a delta) has each delta's part kept as it came, up to
// MaxStreamedBytes a choice. Asked for several answers ("n"), each choice
// kept its own bound, so the outcome's step passed 1 MiB (NATS's default
// max_payload) and the whole answer was recorded failed, too large to
// store, though the app got it. The other choices' parts share one bound,
// as their annotations do.
func TestStreamedContentPartsOfSeveralChoicesKeepTheAnswer(t *testing.T) {
	const choices = 5
	fragment := strings.Repeat("thinking it over ", 3)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(i int, delta, finish string) {
			fmt.Fprintf(w, `data: {"id":"x","object":"chat.completion.chunk","model":"magistral","choices":[{"index":%d,"delta":%s,"finish_reason":%s}]}`+"\n\n", i, delta, finish)
		}
		for i := range choices {
			// About 200 KiB of parts a choice, under the bound of one.
			for range 2300 {
				chunk(i, fmt.Sprintf(`{"content":[{"type":"thinking","thinking":[{"type":"text","text":%q}]}]}`, fragment), "null")
			}
			chunk(i, fmt.Sprintf(`{"content":[{"type":"text","text":"answer %d"}]}`, i), "null")
			chunk(i, `{}`, `"stop"`)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)

	s := natstest.Start(t, natstest.WithMaxPayload(1<<20)) // NATS's default
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: s.Conn.IsConnected, Token: token, OpenAIUpstream: up.URL + "/v1", MaxBody: 64 << 20})
	require.NoError(t, err)
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	r := &rig{srv: s, log: l, gw: hs}

	body := fmt.Sprintf(`{"model":"magistral","n":%d,"stream":true,"messages":[{"role":"user","content":"think"}]}`, choices)
	out := onlyCallsOutput(t, r, body)
	require.Len(t, out, 1, "the streamed answer is recorded, not failed as too large to store")
	assert.Equal(t, "answer 0", out[0].Text)
}
