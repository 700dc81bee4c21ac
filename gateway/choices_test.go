package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestEveryChoiceIsRecorded: a Chat Completions call that asks for two
// answers ("n": 2) is recorded with both: the conversation goes on with
// the first, and the second is kept in inference.finished (other_choices),
// streamed or not. The second used to be dropped from the record without
// a word.
func TestEveryChoiceIsRecorded(t *testing.T) {
	r := newRig(t, newChoicesUpstream(t).URL, "")
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			conv := fmt.Sprintf("choices-%v", stream)
			resp, out := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv},
				fmt.Sprintf(`{"model":"m","n":2,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
			require.Equal(t, 200, resp.StatusCode, "%s", out)
			assert.Contains(t, string(out), "answer B", "the client got both")

			turn, err := r.log.Load(t.Context(), conv)
			require.NoError(t, err)
			require.Len(t, turn.Blocks, 2)
			assert.Equal(t, "answer A", turn.Blocks[1].Text, "the conversation goes on with the first")
			var fin events.InferenceFinished
			for _, e := range conversationEvents(t, r.log, conv) {
				if p, ok := e.Payload.(events.InferenceFinished); ok {
					fin = p
				}
			}
			var others []struct {
				Index   int `json:"index"`
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			}
			require.NoError(t, json.Unmarshal([]byte(fin.OtherChoices), &others), "%q", fin.OtherChoices)
			require.Len(t, others, 1)
			assert.Equal(t, 1, others[0].Index)
			assert.Equal(t, "answer B", others[0].Message.Content)
			var text strings.Builder
			for e, err := range replay.Entries(t.Context(), r.log, conv) {
				require.NoError(t, err)
				fmt.Fprintln(&text, e.Summary)
			}
			assert.Contains(t, text.String(), "1 other choice kept beside the first (other_choices)")
			verify(t, r.log, conv)
		})
	}
}

// newChoicesUpstream answers a Chat Completions call with as many choices
// as its "n" asks ("answer A", "answer B", ...), streamed or not.
func newChoicesUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			N      int  `json:"n"`
			Stream bool `json:"stream"`
		}
		json.Unmarshal(raw, &body)
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			var choices []string
			for i := range body.N {
				choices = append(choices, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":"answer %c"},"finish_reason":"stop"}`, i, 'A'+i))
			}
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"m","choices":[%s]}`, strings.Join(choices, ","))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range body.N {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":%d,\"delta\":{\"role\":\"assistant\",\"content\":\"answer %c\"}}]}\n\n", i, 'A'+i)
		}
		for i := range body.N {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":%d,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", i)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	return up
}

// TestSDKChoicesAreRecorded: the official openai SDK asking for two
// answers, then streaming two more, gets them all through the gateway,
// byte for byte, and the record holds them all.
func TestSDKChoicesAreRecorded(t *testing.T) {
	r := newRig(t, newChoicesUpstream(t).URL, "", managed)
	res := runSDK(t, "chat_choices.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	assert.Equal(t, []string{"answer A", "answer B", "answer A", "answer B"}, res.Texts)
	r.wire.mu.Lock()
	assert.Equal(t, res.Sent, r.wire.sent, "requests byte for byte")
	assert.Equal(t, res.Received, r.wire.received, "responses byte for byte")
	r.wire.mu.Unlock()
	require.Len(t, res.Conversations, 2)
	for _, conv := range res.Conversations {
		var fin events.InferenceFinished
		for _, e := range conversationEvents(t, r.log, conv) {
			if p, ok := e.Payload.(events.InferenceFinished); ok {
				fin = p
			}
		}
		assert.Contains(t, fin.OtherChoices, "answer B", "%s keeps the second choice", conv)
		verify(t, r.log, conv)
	}
}
