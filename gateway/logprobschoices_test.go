package gateway_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestStreamedChoicesLogprobsFitOneMessage: MaxLogprobsBytes (256 KiB)
// keeps a call's outcome under NATS's default 1 MiB max_payload, but it
// bounded each choice's logprobs alone: five streamed answers with
// top_logprobs 20 made an outcome of 1.26 MB, and the answer's record was
// lost (recorded failed, "too large to store"). The bound is now the
// call's, on a server of the default max_payload.
func TestStreamedChoicesLogprobsFitOneMessage(t *testing.T) {
	const choices = 5
	// One token's logprobs with 20 alternatives: about 1.2 KB.
	rnd := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, 6)
		for i := range b {
			b[i] = byte('a' + rnd.IntN(26))
		}
		return string(b)
	}
	lpTok := func() string {
		var alts []string
		for i := 0; i < 20; i++ {
			alts = append(alts, fmt.Sprintf(`{"token":%q,"logprob":%.9f,"bytes":[%d,%d]}`, word(), -rnd.Float64()*10, rnd.IntN(256), rnd.IntN(256)))
		}
		return fmt.Sprintf(`{"token":%q,"logprob":%.9f,"bytes":[120],"top_logprobs":[`, word(), -rnd.Float64()) + strings.Join(alts, ",") + `]}`
	}
	perChoice := (calls.MaxLogprobsBytes - 8192) / (len(lpTok()) + 1) // each choice stays under the cap
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < perChoice; i++ {
			for c := 0; c < choices; c++ {
				fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":%d,"delta":{"content":"x"},"logprobs":{"content":[%s],"refusal":null},"finish_reason":null}]}`+"\n\n", c, lpTok())
			}
		}
		for c := 0; c < choices; c++ {
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":%d,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`+"\n\n", c)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)

	srv := natstest.Start(t, natstest.WithMaxPayload(1<<20)) // NATS's default max_payload
	l, err := eventlog.Open(t.Context(), srv.Conn)
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: srv.Conn.IsConnected, Token: token, OpenAIUpstream: up.URL + "/v1"})
	require.NoError(t, err)
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)

	resp, _ := postOK(t, gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token},
		`{"model":"m","stream":true,"n":5,"logprobs":true,"top_logprobs":20,"messages":[{"role":"user","content":"hi"}]}`)
	conv := resp.Header.Get("Turnlog-Conversation")
	require.NotEmpty(t, conv)
	var finished []events.InferenceFinished
	var failed []string
	for _, e := range conversationEvents(t, l, conv) {
		switch p := e.Payload.(type) {
		case events.InferenceFinished:
			finished = append(finished, p)
		case events.InferenceFailed:
			failed = append(failed, p.Error)
		}
	}
	assert.Empty(t, failed, "the answer's record is not lost")
	require.Len(t, finished, 1, "the streamed answer is recorded")
	assert.NotEmpty(t, finished[0].Logprobs, "the first choice's logprobs are kept")
	assert.Contains(t, finished[0].OtherChoices, `"omitted_bytes"`, "some other choice's past the bound keep their size")
}
