package check_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

// rec records a conversation the way a worker or a library user does:
// events in order, a model call as an inference.started.
type rec struct {
	evs   []events.Event
	calls int
}

func (r *rec) add(actor string, p events.Payload) *rec {
	r.evs = append(r.evs, events.New("c", "req", len(r.evs), actor, p))
	return r
}

func (r *rec) prompt(id, text string) *rec {
	return r.add("systemprompt.template", events.SystemPromptSet{BlockID: id, Text: text, Trust: events.Trusted})
}
func (r *rec) user(id, text string) *rec {
	return r.add("app", events.UserAppended{BlockID: id, Text: text})
}
func (r *rec) answer(id, text string) *rec {
	return r.add("engine", events.LLMTextAppended{BlockID: id, Text: text})
}
func (r *rec) reasoning(id, text string) *rec {
	return r.add("engine", events.ReasoningAppended{BlockID: id, Text: text})
}
func (r *rec) toolCall(id, callID string) *rec {
	return r.add("engine", events.ToolCalled{BlockID: id, CallID: callID, Name: "lookup", Arguments: `{"q":"x"}`})
}
func (r *rec) toolResult(id, callID string) *rec {
	return r.add("tools", events.ToolResult{BlockID: id, CallID: callID, Text: "42"})
}
func (r *rec) call() *rec {
	r.calls++
	return r.add("engine", events.InferenceStarted{InferenceID: fmt.Sprint("inf", r.calls), Model: "m", InputHash: "h"})
}

// findings checks the whole conversation.
func (r *rec) findings(t *testing.T) []check.Finding {
	t.Helper()
	fs, calls, err := check.Conversation(r.evs)
	require.NoError(t, err)
	require.Equal(t, r.calls, calls)
	return fs
}

// got is what a test compares: rule and call of each finding.
type got struct {
	Rule check.Rule
	Call int
}

func summary(fs []check.Finding) []got {
	out := []got{}
	for _, f := range fs {
		out = append(out, got{f.Rule, f.Call})
	}
	return out
}
