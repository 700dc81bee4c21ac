package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Aside is a model call made for a conversation whose input is not the
// conversation's Turn, such as the summary a compaction asks for. It is a
// model call all the same, so it is recorded as one (see InferAside), with
// what its input was built from.
type Aside struct {
	// Input is the call's input, built by the caller; Input.Turn must
	// not be the conversation's Turn.
	Input Input
	// Purpose says why the call is made ("compaction"); required, since
	// it is what tells such a call from the model answering the user.
	Purpose string
	// Instructions, InputBlocks and TemplateHash are recorded in
	// inference.started (see events.InferenceStarted): the system text of
	// the input, the IDs of the conversation's blocks the rest of it was
	// made of, and the template the instructions were rendered from. With
	// them and the log, replay rebuilds Input.Turn and checks its hash.
	Instructions string
	InputBlocks  []string
	TemplateHash string
	// Untrusted are the spans of Instructions that template variables
	// filled in (see events.Block.Untrusted), recorded for auditors.
	Untrusted []events.Span
}

// InferAside makes the call a with e and records it in tx like every
// model call: inference.started (model, hash of the input Turn, its system
// prompt, the purpose and a's provenance fields) is committed before the
// model is asked, together with whatever tx has pending, so a call that
// crashes or hangs still left its trace; inference.finished (with the
// request the engine sent, see WireRecorder) stays pending,
// to be committed with the caller's next events; a failure is committed as
// inference.failed and returned. The model's output is returned, not
// added to the Turn: the caller decides what it becomes (a summary in
// turn.compacted). ctx carries a.Purpose to the engine (WithPurpose).
func InferAside(ctx context.Context, tx *Tx, e Engine, a Aside) (Output, error) {
	if a.Input.Turn == nil || a.Input.Turn == tx.Turn() {
		return Output{}, errors.New("engine: an aside call needs an input Turn of its own")
	}
	if a.Purpose == "" {
		return Output{}, errors.New("engine: an aside call needs a purpose")
	}
	in := a.Input.Turn
	started := events.InferenceStarted{
		InferenceID:  NewID(),
		Model:        a.Input.Model,
		InputHash:    projector.Hash(in),
		Blocks:       len(in.Blocks),
		Purpose:      a.Purpose,
		Instructions: a.Instructions,
		InputBlocks:  a.InputBlocks,
		TemplateHash: a.TemplateHash,
		Untrusted:    a.Untrusted,
	}
	if sp, _, ok := in.SystemPrompt(); ok {
		started.SystemPromptID = sp.ID
		started.SystemPromptHash = projector.HashText(sp.Text)
	}
	if err := tx.Emit(ActorEngine, started); err != nil {
		return Output{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Output{}, err
	}
	begin := time.Now()
	callCtx, span := startSpan(WithPurpose(ctx, a.Purpose), e, tx.Turn(), in.Blocks, started)
	wctx, wire := WithWireRecorder(callCtx, false)
	out, err := e.Infer(wctx, a.Input, nil)
	took := time.Since(begin)
	span.End(spanResult(out, err))
	if err != nil {
		failed := events.InferenceFailed{InferenceID: started.InferenceID, Error: err.Error(), Transient: IsTransient(err), Duration: took, Wire: wire.Wire()}
		if eerr := tx.Emit(ActorEngine, failed); eerr != nil {
			return Output{}, fmt.Errorf("%s call failed: %w (and recording it failed: %v)", a.Purpose, err, eerr)
		}
		if cerr := tx.Commit(ctx); cerr != nil {
			return Output{}, fmt.Errorf("%s call failed: %w (and recording it failed: %v)", a.Purpose, err, cerr)
		}
		return Output{}, err
	}
	if err := tx.Emit(ActorEngine, events.InferenceFinished{
		InferenceID:      started.InferenceID,
		PromptTokens:     out.Usage.PromptTokens,
		CompletionTokens: out.Usage.CompletionTokens,
		StopReason:       out.StopReason,
		Duration:         took,
		Wire:             wire.Wire(),
	}); err != nil {
		return Output{}, err
	}
	return out, nil
}
