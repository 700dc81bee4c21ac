package check_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

func TestSentFindsWhatTheRequestLeftOut(t *testing.T) {
	in := []events.Block{
		{ID: "u", Kind: events.KindUser, Text: "look it up"},
		{ID: "r", Kind: events.KindReasoning, Text: "use the tool"},
		{ID: "c", Kind: events.KindToolCall, CallID: "k1", ToolName: "lookup", Arguments: "{}"},
		{ID: "t", Kind: events.KindToolResult, CallID: "k1", Text: "42"},
	}
	c := check.New()
	all := func(int) bool { return true }
	assert.Empty(t, c.Sent(1, 3, in, all), "everything sent: nothing the Turn's check does not see")
	noReasoning := func(i int) bool { return in[i].Kind != events.KindReasoning }
	assert.Empty(t, c.Sent(1, 3, in, noReasoning), "reasoning not sent breaks no rule")

	noCall := func(i int) bool { return in[i].Kind != events.KindToolCall }
	fs := c.Sent(2, 7, in, noCall)
	require.Len(t, fs, 2)
	assert.Equal(t, []check.Rule{check.RuleReasoningWithoutFollower, check.RuleToolResultWithoutCall}, []check.Rule{fs[0].Rule, fs[1].Rule})
	for _, f := range fs {
		assert.Equal(t, 2, f.Call)
		assert.Equal(t, 7, f.N)
		assert.Contains(t, f.Detail, "in the request as sent (1 of the input's 4 blocks not sent")
	}

	// A fault the Turn already has is the Turn's finding, not the wire's.
	broken := append([]events.Block{}, in[0], in[3])
	assert.Empty(t, c.Sent(1, 1, append(broken, events.Block{ID: "u2", Kind: events.KindUser, Text: "x"}), func(i int) bool { return i != 2 }))
}
