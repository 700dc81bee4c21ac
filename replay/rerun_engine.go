package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// errNotRecorded marks a model call or tool call the log has no recorded
// answer for: the re-run asked for more than the original run did.
var errNotRecorded = errors.New("not recorded in the log")

// recordedCall is one model call of the request as the log recorded it.
type recordedCall struct {
	started  events.InferenceStarted
	blocks   []events.Block
	finished *events.InferenceFinished
	failed   *events.InferenceFailed
}

// replayEngine answers model calls with what the log recorded. arm points
// it at the next request. Calls on the conversation's Turn get the k-th
// recorded call of the request; calls on another input (the compaction
// summarizer's) get the end and usage of the k-th recorded call of that
// kind and, when it succeeded, the next recorded summary (logs written
// before the summarizer's calls were recorded have only the summaries).
type replayEngine struct {
	turn      *projector.Turn
	calls     []recordedCall
	next      int
	summaries []string
	nextSum   int
	asides    []recordedCall
	nextAside int
	results   []*recordedResult
}

type recordedResult struct {
	name, args string
	text       string
	isError    bool
	used       bool
}

func (e *replayEngine) arm(turn *projector.Turn, seg []eventlog.Record) {
	e.turn, e.calls, e.next, e.summaries, e.nextSum, e.asides, e.nextAside, e.results = turn, nil, 0, nil, 0, nil, 0, nil
	calls := map[string]events.ToolCalled{}
	for _, b := range turn.Blocks {
		if b.Kind == events.KindToolCall {
			calls[b.CallID] = events.ToolCalled{Name: b.ToolName, Arguments: b.Arguments}
		}
	}
	open := -1 // index in e.calls of the call whose output is being read
	interrupted := interruptedCalls(seg)
	for i := range seg {
		switch p := seg[i].Payload.(type) {
		case events.InferenceStarted:
			if interrupted[p.InferenceID] {
				open = -1 // a crash cut it; the request made it again
				continue
			}
			if isAside(p) {
				e.asides = append(e.asides, recordedCall{started: p})
				open = -1
				continue
			}
			e.calls = append(e.calls, recordedCall{started: p})
			open = len(e.calls) - 1
		case events.InferenceFinished:
			if open >= 0 && e.calls[open].started.InferenceID == p.InferenceID {
				e.calls[open].finished = &p
			} else if a := asideOf(e.asides, p.InferenceID); a != nil {
				a.finished = &p
			}
			open = -1
		case events.InferenceFailed:
			if open >= 0 && e.calls[open].started.InferenceID == p.InferenceID {
				e.calls[open].failed = &p
			} else if a := asideOf(e.asides, p.InferenceID); a != nil {
				a.failed = &p
			}
			open = -1
		case events.ReasoningAppended:
			if open >= 0 {
				e.calls[open].blocks = append(e.calls[open].blocks, events.Block{ID: p.BlockID, Kind: events.KindReasoning, Text: p.Text, Encrypted: p.Encrypted, Meta: p.Meta})
			}
		case events.LLMTextAppended:
			if open >= 0 {
				e.calls[open].blocks = append(e.calls[open].blocks, events.Block{ID: p.BlockID, Kind: events.KindLLMText, Text: p.Text, Meta: p.Meta})
			}
		case events.ToolCalled:
			calls[p.CallID] = p
			if open >= 0 {
				e.calls[open].blocks = append(e.calls[open].blocks, events.Block{ID: p.BlockID, Kind: events.KindToolCall, CallID: p.CallID, ToolName: p.Name, Arguments: p.Arguments, Meta: p.Meta})
			}
		case events.ToolResult:
			c := calls[p.CallID]
			e.results = append(e.results, &recordedResult{name: c.Name, args: c.Arguments, text: p.Text, isError: p.IsError})
		case events.TurnCompacted:
			if p.Summary != nil {
				e.summaries = append(e.summaries, p.Summary.Text)
			}
		}
	}
}

// Infer implements engine.Engine.
func (e *replayEngine) Infer(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
	if err := ctx.Err(); err != nil {
		return engine.Output{}, err
	}
	if in.Turn != e.turn {
		return e.summary()
	}
	if e.next >= len(e.calls) {
		return engine.Output{}, fmt.Errorf("model call %d of the request: %w (it made %d)", e.next+1, errNotRecorded, len(e.calls))
	}
	c := e.calls[e.next]
	e.next++
	switch {
	case c.failed != nil:
		err := errors.New(c.failed.Error)
		if c.failed.Transient {
			err = engine.Transient(err)
		}
		return engine.Output{}, err
	case c.finished == nil:
		return engine.Output{}, fmt.Errorf("model call %d of the request has no recorded end: %w", e.next, errNotRecorded)
	}
	out := engine.Output{StopReason: c.finished.StopReason,
		Usage: engine.Usage{PromptTokens: c.finished.PromptTokens, CompletionTokens: c.finished.CompletionTokens}}
	for _, b := range c.blocks {
		out.Blocks = append(out.Blocks, b.Clone())
	}
	return out, nil
}

// summary answers the compaction summarizer's next call: the next
// recorded call's end and, when it succeeded, the next recorded summary.
func (e *replayEngine) summary() (engine.Output, error) {
	var out engine.Output
	if k := e.nextAside; k < len(e.asides) {
		e.nextAside++
		c := e.asides[k]
		switch {
		case c.failed != nil:
			err := errors.New(c.failed.Error)
			if c.failed.Transient {
				err = engine.Transient(err)
			}
			return engine.Output{}, err
		case c.finished == nil:
			return engine.Output{}, fmt.Errorf("summary %d of the request has no recorded end: %w", k+1, errNotRecorded)
		}
		out.StopReason = c.finished.StopReason
		out.Usage = engine.Usage{PromptTokens: c.finished.PromptTokens, CompletionTokens: c.finished.CompletionTokens}
	}
	k := e.nextSum
	if k >= len(e.summaries) {
		return engine.Output{}, fmt.Errorf("summary %d of the request: %w", k+1, errNotRecorded)
	}
	e.nextSum++
	out.Blocks = []events.Block{{Kind: events.KindLLMText, Text: e.summaries[k]}}
	return out, nil
}

// asideOf returns the recorded aside call with the given inference ID.
func asideOf(calls []recordedCall, id string) *recordedCall {
	for i := range calls {
		if calls[i].started.InferenceID == id {
			return &calls[i]
		}
	}
	return nil
}

// replayTools is a registry with every tool the conversation called, each
// answering with the result the log recorded for the current request's
// next unused call of that tool with the same arguments.
func replayTools(recs []eventlog.Record, eng *replayEngine) (*engine.Tools, error) {
	seen := map[string]bool{}
	var tools []engine.Tool
	for i := range recs {
		p, ok := recs[i].Payload.(events.ToolCalled)
		if !ok || seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		name := p.Name
		tools = append(tools, engine.Tool{
			Spec: engine.ToolSpec{Name: name, Description: "replays the results the log recorded"},
			Func: func(_ context.Context, args json.RawMessage) (string, error) {
				for _, r := range eng.results {
					if r.used || r.name != name || !sameArgs(r.args, string(args)) {
						continue
					}
					r.used = true
					if r.isError {
						return "", errors.New(strings.TrimPrefix(r.text, "error: "))
					}
					return r.text, nil
				}
				return "", fmt.Errorf("replay: a result for %s(%s): %w", name, args, errNotRecorded)
			},
		})
	}
	return engine.NewTools(tools...)
}

// sameArgs compares tool arguments as engine.Tools passes them: empty
// arguments arrive as {}.
func sameArgs(recorded, got string) bool {
	if strings.TrimSpace(recorded) == "" {
		recorded = "{}"
	}
	return recorded == got
}
