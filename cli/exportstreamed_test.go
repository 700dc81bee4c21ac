package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExportSaysWhatAStreamedAnswerHolds: export leaves out what chat
// messages JSON cannot carry and says so on stderr. An answer not streamed
// was reported by its item (a refusal, reasoning_content), but a streamed
// one keeps the same in gateway.streamed, which export did not read, so
// it was left out without a word; and a Mistral reasoning model's thinking
// part, in a Chat Completions message not a block of its own as a
// Messages thinking block is, was left out without a word either way.
// Both are now reported, streamed or not.
func TestExportSaysWhatAStreamedAnswerHolds(t *testing.T) {
	sse := func(deltas ...string) string {
		var b strings.Builder
		for i, d := range deltas {
			finish := "null"
			if i == len(deltas)-1 {
				finish = `"stop"`
			}
			fmt.Fprintf(&b, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", d, finish)
		}
		b.WriteString("data: [DONE]\n\n")
		s, _ := json.Marshal(b.String())
		return string(s)
	}
	whole := func(msg string) string {
		return `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":` + msg + `,"finish_reason":"stop"}]}`
	}
	for _, tc := range []struct {
		name, message, stream, want string
	}{
		{"refusal", `{"role":"assistant","content":null,"refusal":"I can't help with that."}`,
			sse(`{"role":"assistant","content":null,"refusal":""}`, `{"refusal":"I can't help with that."}`), "refusal"},
		{"reasoning_content", `{"role":"assistant","content":"4.","reasoning_content":"Two and two."}`,
			sse(`{"role":"assistant","reasoning_content":"Two and two."}`, `{"content":"4."}`), "reasoning_content"},
		{"mistral thinking", `{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Two and two."}]},{"type":"text","text":"4."}]}`,
			sse(`{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Two and two."}]}]}`, `{"content":[{"type":"text","text":"4."}]}`), "thinking"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAuditEnv(t, false)
			lines := []string{
				callLine("2025-03-01T10:00:00Z", "whole", "chat.completions", `{"model":"m","messages":[{"role":"user","content":"2+2?"}]}`, whole(tc.message)),
				callLine("2025-03-01T10:00:00Z", "streamed", "chat.completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"2+2?"}]}`, tc.stream),
			}
			file := e.file("calls.jsonl", strings.Join(lines, "\n")+"\n")
			_, errOut, code := e.run("", "import", "--calls", file)
			require.Equal(t, 0, code, errOut)
			for _, conv := range []string{"whole", "streamed"} {
				_, errOut, code := e.run("", "export", conv)
				require.Equal(t, 0, code, errOut)
				assert.Contains(t, errOut, "1 block holds what chat messages JSON cannot carry", conv)
				assert.Contains(t, errOut, tc.want, conv)
			}
		})
	}
}
