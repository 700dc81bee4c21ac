package replay_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/calls"
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

// A failed call's partial output (what a stream delivered before it
// failed) is shown beside the reason, marked as outside the Turn.
func TestSummaryOfAFailedCall(t *testing.T) {
	ev := func(p events.InferenceFailed) events.Event { return events.New("c", p.InferenceID, 1, "gateway", p) }
	tests := []struct {
		name string
		p    events.InferenceFailed
		want string
	}{
		{name: "no partial output", p: events.InferenceFailed{InferenceID: "i", Error: "cut", Transient: true, Duration: 2 * time.Millisecond},
			want: `failed after 2ms: "cut" (transient)`},
		{name: "partial output", p: events.InferenceFailed{InferenceID: "i", Error: "overloaded", Partial: []events.Block{
			{ID: "p1", Kind: events.KindLLMText, Text: "Hello\nwor"}, {ID: "p2", Kind: events.KindToolCall, CallID: "c1", ToolName: "weather", Arguments: `{"city":"Par`}}},
			want: `failed: "overloaded"; partial output, received by the client, not in the Turn: llm_text "Hello⏎wor", tool_call "weather({\"city\":\"Par)"`},
		{name: "many blocks", p: events.InferenceFailed{InferenceID: "i", Error: "cut", Partial: []events.Block{
			{ID: "1", Kind: events.KindReasoning, Text: "a"}, {ID: "2", Kind: events.KindLLMText, Text: "b"}, {ID: "3", Kind: events.KindLLMText, Text: "c"},
			{ID: "4", Kind: events.KindLLMText, Text: "d"}, {ID: "5", Kind: events.KindLLMText, Text: "e"}}},
			want: `failed: "cut"; partial output, received by the client, not in the Turn: reasoning "a", llm_text "b", llm_text "c", and 2 more`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, replay.Summary(ev(tc.p)))
		})
	}
}

// Items put into a provider's conversation that were too large to store
// are marked by a block of kind other; the timeline says what the record
// lacks, where a plain insertion's summary cut the text at its preview.
func TestSummaryOfUnstoredItems(t *testing.T) {
	wire := "a40f1e479a0fcfaec0a240cd9e9d52a7b4b3bcad084df2af4d7a12bf830fdb4a"
	mark := func(items string) events.Event {
		return events.New("c", "r", 0, "gateway", events.BlockInserted{Index: 1, Reason: "too large to store", Block: events.Block{
			ID: "b1", Kind: events.KindOther, Text: "[...]", Meta: map[string]string{calls.MetaAddedBy: "POST /v1/conversations/conv_1/items",
				calls.MetaItems: items, calls.MetaWireSHA256: wire, calls.MetaWireBytes: "131149", calls.MetaUnstored: "too large to store"}}})
	}
	assert.Equal(t, `inserted other b1 at 1: NOT STORED: 2 items put into the provider's conversation by "POST /v1/conversations/conv_1/items" (the request's body: 131149 bytes, sha256 a40f1e479a0f…): "too large to store"`,
		replay.Summary(mark("2")))
	assert.Contains(t, replay.Summary(mark("1")), "NOT STORED: 1 item put into")
}
