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
	"github.com/turnlog/turnlog/calls"
)

// mistralThinkingUpstream is a strict stand-in for a Mistral reasoning
// model served OpenAI-compatibly: it refuses a body that is not JSON or
// whose messages are not a list of role-named messages, and answers with
// thinking, then text, both as content parts: whole when not streamed,
// one token a delta when streamed, as Mistral's API does.
func mistralThinkingUpstream(t *testing.T, thinking []string, answer string) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
			openAIError(w, 400, "messages: a list of messages is required")
			return
		}
		for _, m := range req.Messages {
			if m.Role == "" {
				openAIError(w, 400, "messages: each message needs a role")
				return
			}
		}
		if !req.Stream {
			think, _ := json.Marshal(strings.Join(thinking, ""))
			text, _ := json.Marshal(answer)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"magistral","choices":[{"index":0,"message":{"role":"assistant","content":[`+
				`{"type":"thinking","thinking":[{"type":"text","text":%s}]},{"type":"text","text":%s}]},"finish_reason":"stop"}],`+
				`"usage":{"prompt_tokens":5,"completion_tokens":9}}`, think, text)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string, finish string) {
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","model":"magistral","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
		}
		chunk(`{"role":"assistant","content":""}`, "null")
		for _, tok := range thinking {
			s, _ := json.Marshal(tok)
			chunk(fmt.Sprintf(`{"content":[{"type":"thinking","thinking":[{"type":"text","text":%s}]}]}`, s), "null")
		}
		for _, tok := range strings.SplitAfter(answer, " ") {
			s, _ := json.Marshal(tok)
			chunk(fmt.Sprintf(`{"content":[{"type":"text","text":%s}]}`, s), "null")
		}
		chunk(`{}`, `"stop"`)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	return up
}

// longThinking is ~24 KB of thinking, as a model streams it a token a
// delta.
func longThinking() []string {
	var thinking []string
	for i := range 5000 {
		thinking = append(thinking, fmt.Sprintf("step%d ", i%10))
	}
	return thinking
}

// TestStreamedThinkingIsKeptWhole: a Mistral reasoning model streams its
// thinking as one "thinking" part a token. The record kept each delta's
// part as it came, about 13 times the text's size, so ~20 KB of thinking
// passed the 256 KiB bound and content_parts was {"omitted_bytes": n}:
// the thinking the app showed was not in the record. The streamed
// thinking is now joined into one part, as the answer not streamed
// writes it.
func TestStreamedThinkingIsKeptWhole(t *testing.T) {
	thinking := longThinking()
	up := mistralThinkingUpstream(t, thinking, "The answer is 4.")
	r := newRig(t, up.URL, "")
	out := onlyCallsOutput(t, r, `{"model":"magistral","stream":true,"messages":[{"role":"user","content":"2+2?"}]}`)
	require.Len(t, out, 1)
	assert.Equal(t, "The answer is 4.", out[0].Text)
	var said map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out[0].Meta[calls.MetaStreamed]), &said), out[0].Meta)
	want := fmt.Sprintf(`[{"type":"thinking","thinking":[{"type":"text","text":%q}]}]`, strings.Join(thinking, ""))
	assert.JSONEq(t, want, string(said["content_parts"]), "the thinking the app got, as one part, is in the record")
}
