package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/replay"
)

// TestImportStreamedThinking: import --calls reads a streamed call's
// logged response as the gateway reads the stream: a Mistral reasoning
// model's thinking, a part a token, is kept whole as one part, and the
// next logged call, which sends the answer back with its thinking, is
// threaded into the chat, verified and checked clean.
func TestImportStreamedThinking(t *testing.T) {
	e := newAuditEnv(t, false)
	var sse, thinking strings.Builder
	chunk := func(delta, finish string) {
		fmt.Fprintf(&sse, `data: {"id":"c","object":"chat.completion.chunk","model":"magistral","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
	}
	for i := range 5000 {
		tok := fmt.Sprintf("step%d ", i%10)
		thinking.WriteString(tok)
		chunk(`{"content":[{"type":"thinking","thinking":[{"type":"text","text":"`+tok+`"}]}]}`, "null")
	}
	chunk(`{"content":[{"type":"text","text":"The answer is 4."}]}`, "null")
	chunk(`{}`, `"stop"`)
	sse.WriteString("data: [DONE]\n\n")
	streamed, err := json.Marshal(sse.String())
	require.NoError(t, err)

	first := `{"role":"user","content":"2+2?"}`
	sentBack := fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":%q}]},{"type":"text","text":"The answer is 4."}]}`, thinking.String())
	req := func(msgs string, stream bool) string {
		return fmt.Sprintf(`{"model":"magistral","stream":%v,"messages":[%s]}`, stream, msgs)
	}
	lines := []string{
		callLine("2025-03-01T10:00:00Z", "", "chat.completions", req(first, true), string(streamed)),
		callLine("2025-03-01T10:01:00Z", "", "chat.completions", req(first+","+sentBack+`,{"role":"user","content":"and 3+3?"}`, false),
			`{"id":"c2","object":"chat.completion","model":"magistral","choices":[{"index":0,"message":{"role":"assistant","content":"6."},"finish_reason":"stop"}]}`),
	}
	file := e.file("calls.jsonl", strings.Join(lines, "\n")+"\n")
	out, errOut, code := e.run("", "import", "--calls", file, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var res []gateway.Imported
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res, 2)
	conv := res[0].Conversation
	assert.Equal(t, conv, res[1].Conversation, "the call that sends the answer back with its thinking continues the chat")

	page, err := replay.Calls(t.Context(), e.log, conv, replay.Page{})
	require.NoError(t, err)
	require.NotEmpty(t, page.Calls)
	require.Len(t, page.Calls[0].Output, 1)
	var said map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(page.Calls[0].Output[0].Meta[calls.MetaStreamed]), &said))
	assert.JSONEq(t, fmt.Sprintf(`[{"type":"thinking","thinking":[{"type":"text","text":%q}]}]`, thinking.String()), string(said["content_parts"]))

	_, errOut, code = e.run("", "replay", "--verify", conv)
	assert.Equal(t, 0, code, errOut)
	out, errOut, code = e.run("", "replay", "--check", "-o", "json", conv)
	assert.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "history_rewritten")
}
