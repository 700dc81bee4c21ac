package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// TestStreamedSearchesKeepTheAnswer: a streamed Claude answer that
// searched the web five times (max_uses: 5): each web_search_tool_result
// carries its pages' encrypted content, ~230 KiB here, under
// MaxStreamedBytes each. gateway.streamed was bounded per block only, so
// the outcome's step passed 1 MiB (NATS's default max_payload) and the
// whole answer was recorded failed "too large to store". The bound is now
// the answer's, its blocks' in order.
func TestStreamedSearchesKeepTheAnswer(t *testing.T) {
	raw := make([]byte, 19<<10)
	_, _ = rand.Read(raw)
	enc := base64.StdEncoding.EncodeToString(raw) // one page's encrypted_content (~25 KiB, incompressible)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)
		idx := 0
		for s := range 5 {
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"server_tool_use","id":"srvtoolu_%d","name":"web_search","input":{}}}`, idx, s))
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"q%d\"}"}}`, idx, s))
			ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
			idx++
			var results []string
			for p := range 9 {
				results = append(results, fmt.Sprintf(`{"type":"web_search_result","url":"https://example.com/%d/%d","title":"Page","encrypted_content":"%s","page_age":null}`, s, p, enc))
			}
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_%d","content":[%s]}}`, idx, s, strings.Join(results, ",")))
			ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
			idx++
		}
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, idx))
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":"It is sunny in Paris."}}`, idx))
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, idx))
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(up.Close)

	s := natstest.Start(t, natstest.WithMaxPayload(1<<20)) // NATS's default
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: s.Conn.IsConnected, Token: token, AnthropicUpstream: up.URL, Transport: &wireLog{next: http.DefaultTransport}})
	require.NoError(t, err)
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	r := &rig{srv: s, log: l, gw: hs}

	body := `{"model":"c","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"weather in paris?"}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]}`
	resp, _ := postOK(t, hs.URL+"/v1/messages", map[string]string{"Turnlog-Token": token, "Anthropic-Version": "2023-06-01", "Turnlog-Conversation": "searched"}, body)
	require.Equal(t, "searched", resp.Header.Get("Turnlog-Conversation"))
	started, finished, failed := inferences(t, r, "searched")
	require.Len(t, started, 1)
	assert.Empty(t, failed, "the streamed answer is recorded, not failed as too large to store")
	assert.Equal(t, 1, finished)
	total := 0
	view, err := replay.Calls(t.Context(), r.log, "searched", replay.Page{})
	require.NoError(t, err)
	for _, c := range view.Calls {
		for _, b := range c.Output {
			total += len(b.Meta[calls.MetaStreamed])
		}
	}
	assert.LessOrEqual(t, total, calls.MaxStreamedBytes+5*len(`{"omitted_bytes":1234567}`), "the answer's streamed JSON within one bound")
	assert.Positive(t, total, "what fits is kept")
}
