// Package engine runs a chat request against a model: the Tx through which
// middlewares change a Turn, the middleware chain that records every model
// call, the Engine interface that providers implement and the tool-calling
// loop.
package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Engine turns an input Turn into the model's output blocks. Providers
// (scripted, openai) implement it; it is the one thing the chain needs
// from a model.
type Engine interface {
	// Infer sends in to the model and returns its output. Deltas of text
	// and reasoning are passed to delta as they arrive (delta may be nil).
	// It must not modify in.Turn.
	Infer(ctx context.Context, in Input, delta func(Delta)) (Output, error)
}

// Input is everything a model call receives.
type Input struct {
	// Turn is the exact Turn sent; its hash is recorded in
	// inference.started. It is read-only: a call whose engine changed it
	// fails (the model may have been sent what the log does not hold).
	Turn *projector.Turn
	// Model names the model, e.g. "gpt-4o-mini"; providers may have a default.
	Model string
	// Tools the model may call.
	Tools []ToolSpec
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is a JSON Schema object for the arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Delta is a piece of streamed output, published to live clients.
type Delta struct {
	// Kind is events.KindLLMText or events.KindReasoning.
	Kind events.Kind `json:"kind"`
	Text string      `json:"text"`
}

// Output is what a model call produced, in order: reasoning, text and tool
// calls, as blocks (a block without a kind is text; any other kind fails
// the call). Block IDs may be empty; the chain assigns them.
type Output struct {
	Blocks     []events.Block
	Usage      Usage
	StopReason string
	// ResponseModel and ResponseID are what the provider said of its
	// answer (the model that answered, its response ID), where it says
	// so: they go on the call's trace span, not into the log.
	ResponseModel string
	ResponseID    string
}

// Usage is the token accounting a provider reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// EngineFunc adapts a function to Engine, for tests and small adapters.
type EngineFunc func(ctx context.Context, in Input, delta func(Delta)) (Output, error)

// Infer implements Engine.
func (f EngineFunc) Infer(ctx context.Context, in Input, delta func(Delta)) (Output, error) {
	return f(ctx, in, delta)
}

// ErrTransient marks errors a retry may cure (rate limits, timeouts, 5xx).
// Providers wrap such errors with Transient; the retry middleware retries
// only those.
var ErrTransient = errors.New("transient")

type transientError struct{ err error }

func (e transientError) Error() string        { return e.err.Error() }
func (e transientError) Unwrap() []error      { return []error{e.err, ErrTransient} }
func (e transientError) Is(target error) bool { return target == ErrTransient }

// Transient marks err as worth retrying; errors.Is(err, ErrTransient) then
// holds and the original error is still reachable with errors.Is/As.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}
