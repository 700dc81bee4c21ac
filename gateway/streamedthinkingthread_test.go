package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestStreamedThinkingContinuesAsNotStreamed: the streamed answer's block
// had no digest of its thinking where the same answer not streamed has
// one, so an app that sends the message back with its thinking (as
// Mistral documents for multi-turn reasoning) did not match it: its next
// call started a conversation of its own. The streamed block is now the
// answer's not streamed, and the next call continues the chat, streamed
// or not.
func TestStreamedThinkingContinuesAsNotStreamed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		thinking []string
	}{
		{"short", []string{"Two ", "and ", "two."}},
		{"long", longThinking()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const answer = "The answer is 4."
			up := mistralThinkingUpstream(t, tc.thinking, answer)
			sentBack := fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":%q}]},{"type":"text","text":%q}]}`,
				strings.Join(tc.thinking, ""), answer)
			blocks := map[bool]events.Block{}
			for _, stream := range []bool{false, true} {
				r := newRig(t, up.URL, "")
				conv, next := askAndSendBack(t, r, stream, sentBack)
				assert.Equal(t, conv, next, "stream=%v: the app that sends the answer back with its thinking continues the chat", stream)
				page, err := replay.Calls(context.Background(), r.log, conv, replay.Page{})
				require.NoError(t, err)
				require.Len(t, page.Calls, 2)
				require.Len(t, page.Calls[0].Output, 1)
				blocks[stream] = page.Calls[0].Output[0]
			}
			streamed, whole := blocks[true], blocks[false]
			assert.Equal(t, whole.Meta[events.MetaParts], streamed.Meta[events.MetaParts], "the streamed answer's block is the answer's not streamed")
			assert.Equal(t, calls.Key(&whole), calls.Key(&streamed))
			assert.Equal(t, whole.Meta["gateway.thought"], streamed.Meta["gateway.thought"], "the streamed answer's thinking is the answer's not streamed")
			assert.NotEmpty(t, whole.Meta["gateway.thought"])
		})
	}
}

// askAndSendBack asks a reasoning model "2+2?" through r, streamed or not,
// then goes on with sentBack (the answer as the app keeps it) and another
// question, with no conversation named; it returns the conversations the
// two calls landed in, after checking that the second's is verified and
// has no finding.
func askAndSendBack(t *testing.T, r *rig, stream bool, sentBack string) (first, next string) {
	t.Helper()
	call := func(msgs string) string {
		t.Helper()
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token},
			fmt.Sprintf(`{"model":"magistral","stream":%v,"messages":[%s]}`, stream, msgs))
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	msgs := `{"role":"user","content":"2+2?"}`
	first = call(msgs)
	next = call(msgs + "," + sentBack + `,{"role":"user","content":"and 3+3?"}`)
	verify(t, r.log, next)
	assert.Empty(t, checkRules(t, r.log, next), "stream=%v", stream)
	return first, next
}
