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
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/replay"
)

// logprobsUpstream answers "no" as two tokens, "n" and "o", with their
// logprobs and two top alternatives each, streamed (a token a chunk) or
// not; tokens is the logprobs content list it sends.
func logprobsUpstream(t *testing.T) (up *httptest.Server, tokens string) {
	tok := func(s string, lp float64) string {
		return fmt.Sprintf(`{"token":%q,"logprob":%g,"bytes":[%d],"top_logprobs":[{"token":%q,"logprob":%g,"bytes":[%d]},{"token":"y","logprob":-4.5,"bytes":[121]}]}`,
			s, lp, s[0], s, lp, s[0])
	}
	list := []string{tok("n", -0.02), tok("o", -0.001)}
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(raw, &body)
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"no","refusal":null},"logprobs":{"content":[%s],"refusal":null},"finish_reason":"stop"}]}`,
				strings.Join(list, ","))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":{"content":[],"refusal":null},"finish_reason":null}]}`+"\n\n")
		for i, tk := range []string{"n", "o"} {
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":%q},"logprobs":{"content":[%s],"refusal":null},"finish_reason":null}]}`+"\n\n", tk, list[i])
		}
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	return up, "[" + strings.Join(list, ",") + "]"
}

// TestLogprobsAreRecorded: an app that asks for logprobs (a classifier
// acting on how sure the model was) through the official openai SDK gets
// them, and the record kept none: only the text. Each call's
// inference.finished now keeps its first choice's logprobs, streamed or
// not, as the SDK received them; replay says so, and the calls view
// carries them.
func TestLogprobsAreRecorded(t *testing.T) {
	up, tokens := logprobsUpstream(t)
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.OpenAIKey = "sk-provider-secret" })
	res := runSDK(t, "chat_logprobs.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	require.Len(t, res.Texts, 2)
	for _, got := range res.Texts {
		assert.JSONEq(t, tokens, got, "the SDK got every token's logprobs")
	}
	require.Len(t, res.Conversations, 2)
	for i, conv := range res.Conversations {
		var fin []events.InferenceFinished
		for _, e := range conversationEvents(t, r.log, conv) {
			if p, ok := e.Payload.(events.InferenceFinished); ok {
				fin = append(fin, p)
			}
		}
		require.Len(t, fin, 1, "call %d", i)
		var kept struct {
			Content json.RawMessage `json:"content"`
		}
		require.NoError(t, json.Unmarshal([]byte(fin[0].Logprobs), &kept), "call %d: %q", i, fin[0].Logprobs)
		assert.JSONEq(t, res.Texts[i], string(kept.Content), "call %d: recorded as the SDK got them", i)

		var text strings.Builder
		for e, err := range replay.Entries(t.Context(), r.log, conv) {
			require.NoError(t, err)
			fmt.Fprintln(&text, e.Summary)
		}
		assert.Contains(t, text.String(), "logprobs of 2 tokens kept (logprobs)")
		view, err := replay.Calls(t.Context(), r.log, conv, replay.Page{})
		require.NoError(t, err)
		require.Len(t, view.Calls, 1)
		assert.JSONEq(t, fin[0].Logprobs, string(view.Calls[0].Logprobs))
		verify(t, r.log, conv)
	}
}
