package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/replay"
)

// TestChatStreamWithoutDoneIsFinished: some OpenAI-compatible servers end
// a Chat Completions stream after its last chunk without "data: [DONE]".
// The official SDKs end the stream there all the same and the app has the
// whole answer, every choice with its finish_reason, but the gateway
// recorded every such call failed ("the stream ended before its final
// event"), its answer as a partial output, not in the Turn. A stream that
// ends cleanly once every choice it sent has finished is now a finished
// call; one that ends before that is still failed.
func TestChatStreamWithoutDoneIsFinished(t *testing.T) {
	chunk := func(index int, delta, finish string) string {
		return fmt.Sprintf("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":%d,\"delta\":%s,\"finish_reason\":%s}]}\n\n", index, delta, finish)
	}
	streams := map[string]string{
		"finished": chunk(0, `{"role":"assistant","content":"Hello"}`, "null") + chunk(1, `{"role":"assistant","content":"Hi"}`, "null") +
			chunk(0, `{"content":" there."}`, "null") + chunk(0, `{}`, `"stop"`) + chunk(1, `{}`, `"length"`) +
			"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\n",
		"a choice unfinished": chunk(0, `{"role":"assistant","content":"Hello"}`, "null") + chunk(1, `{"role":"assistant","content":"Hi"}`, "null") +
			chunk(0, `{"content":" there."}`, `"stop"`),
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, streams[r.Header.Get("X-Test")]) // and no "data: [DONE]"
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	for _, tc := range []struct {
		name   string
		status replay.CallStatus
		output []string
	}{
		{name: "finished", status: replay.CallFinished, output: []string{"Hello there."}},
		{name: "a choice unfinished", status: replay.CallFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "X-Test": tc.name},
				`{"model":"m","n":2,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello"}]}`)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			assert.Equal(t, streams[tc.name], string(body), "the stream passes unchanged")
			conv := resp.Header.Get("Turnlog-Conversation")
			verify(t, r.log, conv)
			page, err := replay.Calls(context.Background(), r.log, conv, replay.Page{})
			require.NoError(t, err)
			require.Len(t, page.Calls, 1)
			c := page.Calls[0]
			assert.Equal(t, tc.status, c.Status, "failure: %s", c.Error)
			var texts []string
			for _, b := range c.Output {
				texts = append(texts, b.Text)
			}
			assert.Equal(t, tc.output, texts)
		})
	}
}
