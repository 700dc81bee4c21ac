package gateway_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/chatfile"
)

// TestExportOfServerToolAnswerKeepsItsText: Claude's answer that searched
// the web is a server_tool_use block, its web_search_tool_result and the
// text. The first two are recorded as blocks of their own with no text,
// which chat messages JSON cannot carry (export says so, naming them);
// `turnlog export` still joined their empty texts with the answer's, so
// the assistant message read "\n\n\n\nIt is sunny in Paris." instead of
// what the model wrote.
func TestExportOfServerToolAnswerKeepsItsText(t *testing.T) {
	r := newRig(t, "", newSearchUpstream(t).URL)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			resp, out := post(t, r.gw.URL+"/v1/messages", map[string]string{"Turnlog-Token": token, "anthropic-version": "2023-06-01"},
				fmt.Sprintf(`{"model":"c","max_tokens":100,"stream":%v,"messages":[{"role":"user","content":"weather in Paris?"}]}`, stream))
			require.Equal(t, 200, resp.StatusCode, "%s", out)
			turn, err := r.log.Load(t.Context(), resp.Header.Get("Turnlog-Conversation"))
			require.NoError(t, err)
			chat := chatfile.FromTurn(turn, "c", time.Now(), time.Now())
			require.Len(t, chat.Messages, 2)
			require.NotNil(t, chat.Messages[1].Content)
			assert.Equal(t, "It is sunny in Paris.", *chat.Messages[1].Content)
			assert.Len(t, chat.Left, 2, "export names the two blocks it leaves out: %v", chat.Left)
		})
	}
}
