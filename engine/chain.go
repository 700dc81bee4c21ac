package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Handler runs one model call on a Tx: middlewares wrap it, the engine is
// at its end.
type Handler func(ctx context.Context, tx *Tx) error

// Middleware wraps a Handler to act before and after the model call. Every
// change it makes to the Turn goes through the Tx.
type Middleware func(Handler) Handler

// ActorEngine is the actor of the events the chain records around a model
// call.
const ActorEngine = "engine"

// Chain composes middlewares around the engine: the first one given is the
// outermost, so it sees the request first and the result last.
//
// The innermost handler records inference.started (model, hash of the
// exact input Turn, ID and hash of the active system prompt) and commits it
// together with the middlewares' changes as one step, before the model is
// called; then the model's output blocks and inference.finished (or
// inference.failed), with the request the engine sent (see WireRecorder),
// as the next step (left pending for the caller to
// commit when the Tx has WithAnswerOpen and the model called no tool).
func Chain(e Engine, mws ...Middleware) Handler {
	h := Infer(e)
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return sealed(h)
}

// sealed digests the Turn before the middlewares see it, so that the
// check before the model call (projector.ChangedInPlace) knows every
// block the Turn holds, the request's new message included: a block no
// model call had hashed yet could be rewritten in place unseen. The
// digests are those the call's input hash reuses.
func sealed(h Handler) Handler {
	return func(ctx context.Context, tx *Tx) error {
		projector.Hash(tx.Turn())
		return h(ctx, tx)
	}
}

// Infer is the handler at the end of every chain: one recorded model call.
func Infer(e Engine) Handler {
	return func(ctx context.Context, tx *Tx) error {
		turn := tx.Turn()
		if err := tx.unrecorded(); err != nil {
			return err
		}
		started := events.InferenceStarted{
			InferenceID: NewID(),
			Model:       tx.Model(),
			InputHash:   projector.Hash(turn),
			Blocks:      len(turn.Blocks),
			Purpose:     PurposeFrom(ctx),
		}
		if sp, _, ok := turn.SystemPrompt(); ok {
			started.SystemPromptID = sp.ID
			started.SystemPromptHash = projector.HashText(sp.Text)
		}
		if err := tx.Emit(ActorEngine, started); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}

		begin := time.Now()
		callCtx, span := startSpan(ctx, e, turn, turn.Blocks, started)
		wctx, wire := WithWireRecorder(callCtx, false)
		var shown streamed
		out, err := safeInfer(wctx, e, Input{Turn: turn, Model: tx.Model(), Tools: tx.Tools()}, func(d Delta) {
			shown.add(d)
			tx.Delta(d)
		})
		if err == nil {
			// An answer the Turn cannot take (a block ID given twice, a
			// tool call without its ID) fails the call: recorded as
			// such, so that the call started above does not stay open.
			err = checkOutput(tx, out.Blocks)
		}
		if err == nil && projector.Hash(turn) != started.InputHash {
			// The model may have been sent what the log does not hold,
			// and the change would stay in the Turn every later call
			// and snapshot is made from.
			err = errInputChanged
		}
		took := time.Since(begin)
		span.End(spanResult(out, err))
		if err != nil {
			failed := events.InferenceFailed{InferenceID: started.InferenceID, Error: err.Error(), Transient: IsTransient(err), Duration: took, Wire: wire.Wire()}
			// What the call streamed before it failed (the client was
			// shown it) is kept, not added to the Turn.
			partial, tooLarge := shown.partial()
			failed.Partial = partial
			if tooLarge {
				failed.Error += partialUnstoredNote
			}
			if eerr := tx.Emit(ActorEngine, failed); eerr != nil {
				return fmt.Errorf("inference failed: %w (and recording it failed: %v)", err, eerr)
			}
			if cerr := tx.Commit(ctx); cerr != nil {
				return fmt.Errorf("inference failed: %w (and recording it failed: %v)", err, cerr)
			}
			return fmt.Errorf("inference: %w", err)
		}
		if len(out.Blocks) == 0 {
			// An empty answer is still an answer: record it, or the loop
			// would ask the model again and again.
			out.Blocks = []events.Block{{Kind: events.KindLLMText}}
		}
		for _, b := range out.Blocks {
			if err := tx.Emit(ActorEngine, outputPayload(b)); err != nil {
				return fmt.Errorf("model output: %w", err)
			}
		}
		if err := tx.Emit(ActorEngine, events.InferenceFinished{
			InferenceID:      started.InferenceID,
			PromptTokens:     out.Usage.PromptTokens,
			CompletionTokens: out.Usage.CompletionTokens,
			StopReason:       out.StopReason,
			Duration:         took,
			Wire:             wire.Wire(),
		}); err != nil {
			return err
		}
		if tx.answerOpen && !callsTools(out.Blocks) {
			return nil // the caller commits the answer with the request's end
		}
		return tx.Commit(ctx)
	}
}

// errInputChanged fails a model call whose engine wrote to the Turn it was
// given (Input.Turn is read-only).
var errInputChanged = errors.New("the engine changed the Turn it was given (Input.Turn is read-only): the model may have been sent what the log does not hold; the conversation is reloaded from the log")

// safeInfer calls the engine, a panic in it returned as *PanicError.
func safeInfer(ctx context.Context, e Engine, in Input, delta func(Delta)) (out Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the engine: %w", recovered(p))
		}
	}()
	return e.Infer(ctx, in, delta)
}

// checkOutput says whether the Turn takes the model's output blocks as
// outputPayload records them: each a valid event, under an ID the Turn
// does not hold and the output gives once. The blocks are not changed.
func checkOutput(tx *Tx, blocks []events.Block) error {
	turn := tx.Turn()
	seen := make(map[string]bool, len(blocks))
	calls := make(map[string]int, len(blocks))
	for i, b := range blocks {
		switch b.Kind {
		case "", events.KindLLMText, events.KindReasoning, events.KindToolCall:
		default:
			// A model answers; it does not write the user's words, a
			// tool's result or a system prompt into the conversation.
			return fmt.Errorf("the engine's answer cannot be recorded: block %d is a %s block; a model's answer holds llm_text, reasoning and tool_call blocks only", i, b.Kind)
		}
		if b.ID == "" {
			b.ID = "checked"
		} else if seen[b.ID] || turn.Index(b.ID) >= 0 {
			return fmt.Errorf("the engine's answer cannot be recorded: block %d has ID %q, which the conversation or the answer holds already", i, b.ID)
		}
		seen[b.ID] = true
		if b.Kind == events.KindToolCall && b.CallID != "" {
			// Each result names its call by this ID: two calls under
			// one could not be told apart.
			if j, dup := calls[b.CallID]; dup {
				return fmt.Errorf("the engine's answer cannot be recorded: blocks %d and %d are tool calls with the same call ID %q; each result names its call by it", j, i, b.CallID)
			}
			calls[b.CallID] = i
		}
		e := events.New(turn.Conversation, tx.cause, tx.step, ActorEngine, outputPayload(b))
		if err := e.Validate(); err != nil {
			return fmt.Errorf("the engine's answer cannot be recorded: block %d: %w", i, err)
		}
	}
	return nil
}

func callsTools(blocks []events.Block) bool {
	for _, b := range blocks {
		if b.Kind == events.KindToolCall {
			return true
		}
	}
	return false
}

// outputPayload turns a block the model produced into the event that
// appends it; a block without a kind is text (checkOutput refuses the
// kinds a model cannot produce).
func outputPayload(b events.Block) events.Payload {
	if b.ID == "" {
		b.ID = NewID()
	}
	switch b.Kind {
	case events.KindReasoning:
		return events.ReasoningAppended{BlockID: b.ID, Text: b.Text, Encrypted: b.Encrypted, Meta: b.Meta}
	case events.KindToolCall:
		return events.ToolCalled{BlockID: b.ID, CallID: b.CallID, Name: b.ToolName, Arguments: b.Arguments, Meta: b.Meta}
	default:
		return events.LLMTextAppended{BlockID: b.ID, Text: b.Text, Meta: b.Meta}
	}
}

// IsTransient reports whether a retry may cure err.
func IsTransient(err error) bool { return err != nil && errors.Is(err, ErrTransient) }

type purposeKey struct{}

// WithPurpose marks model calls made under ctx as being for something other
// than answering the user (e.g. "compaction"); inference.started records it.
func WithPurpose(ctx context.Context, purpose string) context.Context {
	return context.WithValue(ctx, purposeKey{}, purpose)
}

// PurposeFrom returns the purpose set by WithPurpose, or "".
func PurposeFrom(ctx context.Context) string {
	p, _ := ctx.Value(purposeKey{}).(string)
	return p
}
