package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Action is what a request needs next.
type Action int

// Actions of NextStep.
const (
	// CallModel: the Turn ends with input the model has not answered.
	CallModel Action = iota
	// RunTools: the model asked for tool calls that have no result yet.
	RunTools
	// Done: the model answered and no tool call is open.
	Done
)

func (a Action) String() string {
	return [...]string{"call model", "run tools", "done"}[a]
}

// Next is NextStep's answer; Calls are the open tool calls for RunTools.
type Next struct {
	Action Action
	Calls  []events.Block
}

// NextStep decides, from the Turn alone, what a request must do next. It is
// pure, so a request interrupted at any point (after the user block, between
// tool calls, before the model answered) resumes from what the log holds.
func NextStep(t *projector.Turn) Next {
	// Tool calls are open when they have no result after them. The model's
	// latest answers are read back to the message before them: a tool
	// call followed by text in one answer is open as much as one that
	// ends it.
	answered := map[string]bool{}
	var open []events.Block
	for i := len(t.Blocks) - 1; i >= 0; i-- {
		b := t.Blocks[i]
		switch b.Kind {
		case events.KindToolResult:
			answered[b.CallID] = true
			continue
		case events.KindToolCall:
			if !answered[b.CallID] {
				open = append(open, b)
			}
			continue
		case events.KindLLMText, events.KindReasoning:
			continue
		}
		break
	}
	if len(open) > 0 {
		// Run them in the order the model asked.
		for i, j := 0, len(open)-1; i < j; i, j = i+1, j-1 {
			open[i], open[j] = open[j], open[i]
		}
		return Next{Action: RunTools, Calls: open}
	}
	if len(t.Blocks) == 0 {
		return Next{Action: Done}
	}
	switch t.Blocks[len(t.Blocks)-1].Kind {
	case events.KindUser, events.KindToolResult:
		return Next{Action: CallModel}
	}
	return Next{Action: Done}
}

// call runs the handler once, a panic in it returned as *PanicError.
func (l Loop) call(ctx context.Context, tx *Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the chain: %w", recovered(p))
		}
	}()
	return l.Handler(ctx, tx)
}

// ErrTooManyIterations ends a request whose model kept calling tools past
// the limit.
var ErrTooManyIterations = errors.New("too many model calls for one request")

// ErrNoModelCall ends a request whose chain returned without an error,
// without calling the model and without answering the Turn itself: a
// middleware that did not call next.
var ErrNoModelCall = errors.New("the middleware chain returned without calling the model, and the Turn still awaits an answer: a middleware did not call next")

// ActorTools is the actor of tool results.
const ActorTools = "tools"

// Loop runs a request to its end: model calls through the chain and tool
// calls, each step committed as it happens, until the model answers without
// calling a tool.
type Loop struct {
	// Handler is the middleware chain ending in the engine (see Chain).
	Handler Handler
	// Tools the model may call; nil means none.
	Tools *Tools
	// MaxIterations bounds model calls per request (default 8).
	MaxIterations int
	// Made is how many model calls the request was answered by before
	// this Run (a request resumed after a crash): they count against
	// MaxIterations, so that a request that keeps being resumed cannot
	// call the model without end.
	Made int
}

// Run drives tx until NextStep says Done. Each model call it makes is
// counted on tx (Tx.ModelCalls). It does not record request.completed or
// request.failed: the caller does, with that count or the reason, so that
// it can also acknowledge the request; worker.Worker.Serve does all of
// it, for a program that runs its own request loop.
func (l Loop) Run(ctx context.Context, tx *Tx) error {
	max := l.MaxIterations
	if max <= 0 {
		max = 8
	}
	calls := l.Made
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		next := NextStep(tx.Turn())
		switch next.Action {
		case Done:
			return nil
		case RunTools:
			for _, c := range next.Calls {
				text, isErr := l.Tools.Call(ctx, c.ToolName, c.Arguments)
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := tx.Emit(ActorTools, events.ToolResult{BlockID: NewID(), CallID: c.CallID, Text: text, IsError: isErr}); err != nil {
					return err
				}
				// One step per result: a crash between tool calls loses
				// at most the call in flight.
				if err := tx.Commit(ctx); err != nil {
					return err
				}
			}
		case CallModel:
			if calls >= max {
				return fmt.Errorf("%w: %d calls, the limit is %d", ErrTooManyIterations, calls, max)
			}
			calls++
			made := tx.ModelCalls()
			if err := l.call(ctx, tx); err != nil {
				return err
			}
			// A middleware that changed the Turn behind the Tx's back
			// after the model call left a Turn the log does not hold:
			// the next call's events, and the caller's (a worker's cache
			// of the conversation), would build on it.
			if err := tx.unrecorded(); err != nil {
				return fmt.Errorf("after the model call: %w", err)
			}
			if tx.ModelCalls() == made && NextStep(tx.Turn()).Action == CallModel {
				// Run again, the chain would do the same until the limit,
				// which would then blame model calls never made.
				return ErrNoModelCall
			}
		}
	}
}
