package events_test

import (
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/vmihailenco/msgpack/v5"
)

// testConv is the conversation every test event belongs to.
const testConv = "conv-01_test"

// samplePayloads returns one payload per catalog type with every field set
// (maps with several keys, nested blocks), so a round trip that dropped or
// mangled any field would show.
func samplePayloads() []events.Payload {
	meta := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	return []events.Payload{
		events.ConversationStarted{
			Profile:    "support",
			ForkedFrom: "origin-1",
			ForkedAt:   7,
			Blocks: []events.Block{
				{ID: "b1", Kind: events.KindSystem, Text: "You are terse.", Trust: events.Trusted,
					Meta: meta(events.MetaSystemPromptSource, "tmpl", events.MetaSystemPromptLock, "1")},
				{ID: "b2", Kind: events.KindUser, Text: "hi"},
				{ID: "b3", Kind: events.KindToolCall, CallID: "c1", ToolName: "lookup", Arguments: `{"q":"x"}`},
				{ID: "b4", Kind: events.KindToolResult, CallID: "c1", Text: "nothing", IsError: true},
				{ID: "b5", Kind: events.KindReasoning, Text: "think", Encrypted: "opaque=="},
			},
			Data: meta("tz", "Europe/Paris", "page", "/home"),
		},
		events.UserAppended{BlockID: "u1", Text: "Hello, wörld", Trust: events.Trusted, Meta: meta(events.MetaSection, "conversation", "lang", "fr")},
		events.SystemPromptSet{BlockID: "s1", Text: "Be kind.", Index: 3, Trust: events.Trusted,
			Meta: meta(events.MetaSystemPromptSource, "global"), TemplateHash: "abc123", Variables: meta("name", "Ada", "tz", "UTC"),
			Untrusted: []events.Span{{Start: 0, End: 2, Var: "file:x"}, {Start: 3, End: 7}}, Template: "[file:x] kind."},
		events.SystemPromptReplaced{BlockID: "s1", Text: "Be kinder.", Previous: "Be kind.", Meta: meta("a", "1", "gone", ""),
			TemplateHash: "def456", Variables: meta("name", "Bob"), Reason: "template changed", PreviousSource: "import",
			Untrusted: []events.Span{{Start: 3, End: 9, Var: "prompt:model"}}, Template: "Be [prompt:model].", PreviousTemplateHash: "abc123"},
		events.SystemPromptLocked{BlockID: "s1", Reason: "legal review"},
		events.SystemPromptUnlocked{BlockID: "s1", Reason: "review done"},
		events.ReasoningAppended{BlockID: "r1", Text: "first, ...", Encrypted: "gAAAA", Meta: meta("provider", "x")},
		events.LLMTextAppended{BlockID: "l1", Text: "Sure.", Meta: meta("model", "m-1")},
		events.ToolCalled{BlockID: "t1", CallID: "call-1", Name: "search", Arguments: `{"q":"go"}`, Meta: meta("k", "v")},
		events.ToolResult{BlockID: "t2", CallID: "call-1", Text: "3 results", IsError: true, Meta: meta("k", "v")},
		events.BlocksReordered{Order: []string{"b2", "b1", "b3"}, Reason: "system first"},
		events.BlocksRemoved{BlockIDs: []string{"r1", "r2"}, Reason: "orphan reasoning"},
		events.BlockAnnotated{BlockID: "u1", Meta: meta("role_marker", "1", "old", ""), Reason: "found [system] in user text"},
		events.BlockInserted{Index: 2, Block: events.Block{ID: "i1", Kind: events.KindOther, Text: "Reminder: cite sources.", Trust: events.Trusted,
			Meta: meta(events.MetaSection, "post_conversation"), Untrusted: []events.Span{{Start: 0, End: 8, Var: "file:x"}}}, Reason: "reminder"},
		events.BlockSplit{BlockID: "s1", Into: []events.Block{
			{ID: "s1", Kind: events.KindSystem, Text: "part 1", Trust: events.Trusted, Untrusted: []events.Span{{Start: 5, End: 6, Var: "system:os"}}},
			{ID: "s1b", Kind: events.KindUser, Text: "part 2", Meta: meta("split_from", "s1")},
		}, Reason: "role markers"},
		events.TurnCompacted{Removed: []string{"u1", "l1"}, Summary: &events.Block{ID: "sum1", Kind: events.KindOther, Text: "they greeted", Meta: meta("compacted", "2")}, Reason: "too long"},
		events.DataSet{Values: meta("tz", "UTC", "profile", "pro"), Unset: []string{"page", "old"}},
		events.InferenceStarted{InferenceID: "inf-1", Model: "gpt-x", InputHash: "h1", SystemPromptID: "s1", SystemPromptHash: "h2", Blocks: 12, Purpose: "compaction",
			Instructions: "Summarize.", InputBlocks: []string{"u1", "l1"}, TemplateHash: "abc123", Untrusted: []events.Span{{Start: 0, End: 3, Var: "x:y"}}},
		events.InferenceFinished{InferenceID: "inf-1", PromptTokens: 100, CompletionTokens: 20, StopReason: "stop", Duration: 1500 * time.Millisecond,
			ResponseID: "resp_1", OtherChoices: `[{"index":1,"message":{"role":"assistant","content":"b"},"finish_reason":"stop"}]`,
			Logprobs: `{"content":[{"token":"a","logprob":-0.1,"bytes":[97],"top_logprobs":[]}],"refusal":null}`,
			Wire:     events.Wire{SHA256: strings.Repeat("0f", 32), Version: "openai-chat/1", Params: `{"model":"gpt-x"}`}},
		events.InferenceFailed{InferenceID: "inf-2", Error: "overloaded_error: Overloaded", Transient: true, Duration: time.Second,
			Partial: []events.Block{
				{ID: "p1", Kind: events.KindReasoning, Text: "The user greets", Encrypted: "sig"},
				{ID: "p2", Kind: events.KindLLMText, Text: "Hello the", Meta: meta("gateway.part", "1")},
				{ID: "p3", Kind: events.KindToolCall, CallID: "toolu_1", ToolName: "weather", Arguments: `{"city":"Par`},
			},
			Wire: events.Wire{SHA256: strings.Repeat("a1", 32), Version: "anthropic-messages/1"}},
		events.RequestCompleted{Inferences: 2},
		events.RequestFailed{Reason: "the model is unreachable; retry later"},
		events.MessageRemoved{Seq: 7, Size: 7, SHA256: strings.Repeat("ab", 32), Headers: meta("Nats-Msg-Id", "x"), Reason: "does not decode"},
		events.FindingRecorded{InferenceID: "inf-1", Rule: "duplicate_system_prompt", Detail: "two system prompts", Blocks: []string{"s1", "s2"}},
	}
}

// newEvent builds a valid event of testConv around p.
func newEvent(p events.Payload) events.Event {
	return events.New(testConv, "req-1", 2, "test", p)
}

// typicalStep is a single-event step of the usual size on the wire (a user
// message with a section tag, ~240 bytes), for benchmarks.
func typicalStep(tb testing.TB) events.Event {
	tb.Helper()
	e := events.New("c-7f3a9e21", "req-5b0e", 0, "worker",
		events.UserAppended{
			BlockID: ulid.Make().String(),
			Text:    "Summarise the attached report and list its three biggest risks.",
			Meta:    map[string]string{events.MetaSection: "conversation"},
		})
	data, err := events.Encode(e)
	require.NoError(tb, err)
	require.InDelta(tb, 240, len(data), 20, "the benchmark's step should be about 240 bytes")
	return e
}

// wire hand-encodes one envelope the way Encode lays it out (a
// map with short keys and the payload as a nested map), with override
// replacing or adding keys and a nil value removing one. It lets tests
// write messages Encode refuses to produce: old versions, unknown types.
func wire(tb testing.TB, override map[string]any) map[string]any {
	tb.Helper()
	m := map[string]any{
		"id":      ulid.Make(),
		"conv":    testConv,
		"type":    string(events.TypeUserAppended),
		"v":       1,
		"time":    time.Date(2025, 11, 23, 4, 5, 6, 7, time.UTC),
		"cause":   "req-1",
		"step":    0,
		"actor":   "test",
		"payload": map[string]any{"block_id": "u1", "text": "hello"},
	}
	for k, v := range override {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// message hand-encodes envelopes (from wire) as one log message.
func message(tb testing.TB, envs ...map[string]any) []byte {
	tb.Helper()
	arr := make([]any, len(envs))
	for i, e := range envs {
		arr[i] = e
	}
	data, err := msgpack.Marshal(arr)
	require.NoError(tb, err)
	return data
}

// rawMsgpack is spliced into a hand-written message verbatim, for bytes no
// Go value encodes to (lengths that lie, deep nesting).
type rawMsgpack = msgpack.RawMessage
