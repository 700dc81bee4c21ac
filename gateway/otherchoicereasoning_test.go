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
)

// TestOtherChoicesKeepWhatTheModelSaid: a reasoning model served
// OpenAI-compatibly (vLLM) asked for two answers ("n": 2) streams each
// choice's reasoning, and an audio model each choice's transcript; the
// app gets them all. A call that is not streamed keeps each other choice
// whole in other_choices; a streamed one kept the first choice's only,
// and other_choices held nothing of the others' reasoning or words.
func TestOtherChoicesKeepWhatTheModelSaid(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(raw), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[`+
				`{"index":0,"message":{"role":"assistant","content":"A.","reasoning_content":"A thinks."},"finish_reason":"stop"},`+
				`{"index":1,"message":{"role":"assistant","content":"B.","reasoning_content":"B thinks.","audio":{"id":"audio_b","transcript":"B says."}},"finish_reason":"stop"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{
			`{"index":0,"delta":{"role":"assistant","reasoning_content":"A thinks."}}`,
			`{"index":1,"delta":{"role":"assistant","reasoning_content":"B "}}`,
			`{"index":1,"delta":{"reasoning_content":"thinks."}}`,
			`{"index":0,"delta":{"content":"A."},"finish_reason":"stop"}`,
			`{"index":1,"delta":{"content":"B.","audio":{"id":"audio_b","transcript":"B "}}}`,
			`{"index":1,"delta":{"audio":{"transcript":"says."}},"finish_reason":"stop"}`,
		} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[%s]}\n\n", c)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			conv := fmt.Sprintf("others-%v", stream)
			_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv},
				fmt.Sprintf(`{"model":"m","n":2,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
			var fin events.InferenceFinished
			for _, e := range conversationEvents(t, r.log, conv) {
				if p, ok := e.Payload.(events.InferenceFinished); ok {
					fin = p
				}
			}
			var others []struct {
				Message struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
					Audio            struct {
						ID         string `json:"id"`
						Transcript string `json:"transcript"`
					} `json:"audio"`
				} `json:"message"`
			}
			require.NoError(t, json.Unmarshal([]byte(fin.OtherChoices), &others), "%q", fin.OtherChoices)
			require.Len(t, others, 1)
			assert.Equal(t, "B.", others[0].Message.Content)
			assert.Equal(t, "B thinks.", others[0].Message.ReasoningContent, "the second choice's reasoning")
			assert.Equal(t, "audio_b", others[0].Message.Audio.ID)
			assert.Equal(t, "B says.", others[0].Message.Audio.Transcript, "the second choice's words")
			verify(t, r.log, conv)
		})
	}
}
