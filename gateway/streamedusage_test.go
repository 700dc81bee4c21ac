package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/replay"
)

// TestStreamedMessagesUsageIsTheFinal: a streamed Claude answer that
// searched the web counts the search's results as input, so its
// message_delta carries the message's whole usage again, input_tokens and
// the cache's counts included (cumulative totals, which the SDKs take
// over those of message_start). The gateway kept message_start's input
// count, taken before the search: the record said 9 input tokens where
// the app, and the same answer not streamed, said 2155. It now takes each
// count message_delta carries.
func TestStreamedMessagesUsageIsTheFinal(t *testing.T) {
	const answer = `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Sunny."}],"stop_reason":"end_turn","stop_sequence":null,` +
		`"usage":{"input_tokens":2105,"cache_creation_input_tokens":0,"cache_read_input_tokens":50,"output_tokens":40,"server_tool_use":{"web_search_requests":1}}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, answer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Sunny."}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":2105,"cache_read_input_tokens":50,"output_tokens":40,"server_tool_use":{"web_search_requests":1}}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, "", up.URL)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			resp, body := post(t, r.gw.URL+"/v1/messages", map[string]string{"Turnlog-Token": token, "anthropic-version": "2023-06-01"},
				fmt.Sprintf(`{"model":"c","max_tokens":100,"stream":%v,"messages":[{"role":"user","content":"weather in Paris?"}]}`, stream))
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			conv := resp.Header.Get("Turnlog-Conversation")
			page, err := replay.Calls(context.Background(), r.log, conv, replay.Page{})
			require.NoError(t, err)
			require.Len(t, page.Calls, 1)
			require.NotNil(t, page.Calls[0].Usage)
			assert.Equal(t, replay.Usage{InputTokens: 2155, OutputTokens: 40}, *page.Calls[0].Usage)
		})
	}
}
