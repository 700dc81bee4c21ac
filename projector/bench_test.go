package projector_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// conversationEvents is the log of a realistic conversation of n requests:
// a system prompt, then per request a user message, request data, one or
// two model calls with reasoning and sometimes a tool call, the answer, and
// now and then a system prompt replacement. About 60% of the events are
// appends, 30% inference and request facts, the rest data and prompt
// changes.
func conversationEvents(tb testing.TB, requests int) []events.Event {
	tb.Helper()
	var evs []events.Event
	step := 0
	add := func(cause string, p events.Payload) {
		evs = append(evs, events.New(conv, cause, step, "bench", p))
		step++
	}
	prompt := "You are a helpful assistant. Answer briefly and cite sources."
	add("setup", events.SystemPromptSet{BlockID: "sys", Text: prompt, Trust: events.Trusted,
		Meta: map[string]string{events.MetaSystemPromptSource: "global", events.MetaSection: "system"}})
	for r := 0; r < requests; r++ {
		cause := fmt.Sprint("req-", r)
		step = 0
		add(cause, events.UserAppended{BlockID: fmt.Sprint("u", r), Text: "What does the quarterly report say about risks in region " + fmt.Sprint(r) + "?",
			Meta: map[string]string{events.MetaSection: "conversation"}})
		if r%3 == 0 {
			add(cause, events.DataSet{Values: map[string]string{"page": fmt.Sprint("/reports/", r), "tz": "Europe/Paris"}})
		}
		if r%10 == 5 {
			next := fmt.Sprintf("%s (revision %d)", prompt, r)
			add(cause, events.SystemPromptReplaced{BlockID: "sys", Previous: prompt, Text: next, TemplateHash: "h", Meta: map[string]string{"revision": fmt.Sprint(r)}})
			prompt = next
		}
		add(cause, events.InferenceStarted{InferenceID: fmt.Sprint("i", r), Model: "m", InputHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", SystemPromptID: "sys", Blocks: 2 * r})
		add(cause, events.ReasoningAppended{BlockID: fmt.Sprint("r", r), Text: "The user asks about risks; look them up.", Encrypted: "gAAAAB..."})
		if r%2 == 0 {
			add(cause, events.ToolCalled{BlockID: fmt.Sprint("tc", r), CallID: fmt.Sprint("c", r), Name: "search", Arguments: `{"q":"quarterly risks"}`})
			add(cause, events.ToolResult{BlockID: fmt.Sprint("tr", r), CallID: fmt.Sprint("c", r), Text: "Supply chain, currency, regulation."})
			add(cause, events.InferenceFinished{InferenceID: fmt.Sprint("i", r), PromptTokens: 900, CompletionTokens: 40, StopReason: "tool_calls", Duration: time.Second})
			add(cause, events.InferenceStarted{InferenceID: fmt.Sprint("j", r), Model: "m", InputHash: "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", Blocks: 2*r + 3})
		}
		add(cause, events.LLMTextAppended{BlockID: fmt.Sprint("l", r), Text: "Three risks: supply chain, currency and regulation.", Meta: map[string]string{"model": "m"}})
		add(cause, events.InferenceFinished{InferenceID: fmt.Sprint("j", r), PromptTokens: 1000, CompletionTokens: 60, StopReason: "stop", Duration: 2 * time.Second})
		add(cause, events.RequestCompleted{Inferences: 1 + (r+1)%2})
	}
	// The log must be valid, or the benchmark would measure errors.
	require.NoError(tb, projector.ApplyAll(projector.New(conv), evs))
	return evs
}

// BenchmarkApply folds a realistic conversation of ~1000 events into a
// fresh Turn per iteration, as loading a conversation without a snapshot
// does, and reports events/s.
func BenchmarkApply(b *testing.B) {
	evs := conversationEvents(b, 100)
	b.ReportAllocs()
	iterations := 0
	for b.Loop() {
		turn := projector.New(conv)
		for _, e := range evs {
			if err := projector.Apply(turn, e); err != nil {
				b.Fatal(err)
			}
		}
		iterations++
	}
	n := float64(iterations * len(evs))
	b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	b.ReportMetric(float64(len(evs)), "events/op")
}
