package gateway_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// An app that sends a Mistral reasoning model's answer back without its
// thinking part (its text alone, as an app that keeps the text it showed
// writes it) goes on with the same answer: the thinking is what the model
// wrote on the way, as Anthropic's thinking blocks, which an app may
// leave out. The thinking was digested with the answer's other parts, so
// such an app's every call started a conversation of its own, streamed or
// not. It is kept in the record and re-rendered where an app sends it
// back (gateway.item), and not compared.
func TestAnswerSentBackWithoutItsThinkingContinues(t *testing.T) {
	const answer = "The answer is 4."
	up := mistralThinkingUpstream(t, []string{"Two ", "and ", "two."}, answer)
	for _, stream := range []bool{false, true} {
		conv, next := askAndSendBack(t, newRig(t, up.URL, ""), stream, fmt.Sprintf(`{"role":"assistant","content":%q}`, answer))
		assert.Equal(t, conv, next, "stream=%v: the app that sends the answer back without its thinking continues the chat", stream)
	}
}
