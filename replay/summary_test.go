package replay_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// A model call whose provider reported no token counts (an OpenAI stream
// without stream_options.include_usage) is not shown as one of no tokens.
func TestSummaryOfAFinishedCall(t *testing.T) {
	ev := func(p events.InferenceFinished) events.Event { return events.New("c", "r", 1, "gateway", p) }
	assert.Equal(t, `finished in 2ms, tokens 12 in / 3 out, stop "stop"`,
		replay.Summary(ev(events.InferenceFinished{InferenceID: "i", PromptTokens: 12, CompletionTokens: 3, StopReason: "stop", Duration: 2 * time.Millisecond})))
	assert.Equal(t, `finished in 2ms, no token counts reported, stop "stop"`,
		replay.Summary(ev(events.InferenceFinished{InferenceID: "i", StopReason: "stop", Duration: 2 * time.Millisecond})))
}
