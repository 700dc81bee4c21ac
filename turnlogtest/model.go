package turnlogtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/events"
)

// Script is a model that answers from a scripted-engine script (YAML; see
// engine/scripted): rules matched against the last user message, with
// replies, reasoning, tool calls and failures. A script that does not
// parse fails the test.
//
//	model := turnlogtest.Script(t, `
//	rules:
//	  - match: "weather in (.+)"
//	    tool_calls: [{name: weather, arguments: '{"city":"$1"}'}]
//	    after_tools: "It is {{result}} in $1."
//	`)
func Script(tb testing.TB, yaml string) engine.Engine {
	tb.Helper()
	s, err := scripted.Parse([]byte(yaml))
	if err != nil {
		tb.Fatalf("turnlogtest: script: %v", err)
	}
	return scripted.New(s)
}

// Replies is a model that answers its n-th call with replies[n], as
// llm_text, and fails any call past the last one, naming it: a test
// states the model's answers and sees a chain that asks more often than
// it meant to. It records the input of every call (Inputs).
type Replies struct {
	mu      sync.Mutex
	replies []string
	inputs  []engine.Input
}

var _ engine.Engine = (*Replies)(nil)

// NewReplies returns a Replies model answering with replies in order.
func NewReplies(replies ...string) *Replies { return &Replies{replies: replies} }

// Infer implements engine.Engine.
func (r *Replies) Infer(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
	if err := ctx.Err(); err != nil {
		return engine.Output{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.inputs)
	in.Turn = in.Turn.Clone()
	r.inputs = append(r.inputs, in)
	if n >= len(r.replies) {
		return engine.Output{}, fmt.Errorf("turnlogtest: model call %d, but the test gave %d replies", n+1, len(r.replies))
	}
	return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: r.replies[n]}}, StopReason: "stop"}, nil
}

// Inputs returns what each call received, in order (the Turn as the
// model saw it, the model name, the tools).
func (r *Replies) Inputs() []engine.Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]engine.Input(nil), r.inputs...)
}
