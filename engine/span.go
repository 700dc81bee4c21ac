package engine

import (
	"context"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/tracing"
)

// startSpan starts the trace span of the model call that started records:
// conv is the conversation's Turn right after started (its event count is
// started's n), input the blocks the model gets. Without a tracer
// installed it is a no-op.
func startSpan(ctx context.Context, e Engine, conv *projector.Turn, input []events.Block, started events.InferenceStarted) (context.Context, *tracing.Call) {
	return tracing.StartModelCall(ctx, tracing.ModelCall{
		Conversation: conv.Conversation,
		Event:        conv.Events,
		InferenceID:  started.InferenceID,
		InputHash:    started.InputHash,
		Model:        started.Model,
		Provider:     ProviderOf(e),
		Purpose:      started.Purpose,
		Input:        input,
	})
}

// spanResult is a model call's outcome as its span records it.
func spanResult(out Output, err error) tracing.CallResult {
	r := tracing.CallResult{
		ResponseModel: out.ResponseModel,
		ResponseID:    out.ResponseID,
		InputTokens:   out.Usage.PromptTokens,
		OutputTokens:  out.Usage.CompletionTokens,
		FinishReason:  out.StopReason,
		Output:        out.Blocks,
		Err:           err,
	}
	if err != nil && IsTransient(err) {
		r.ErrorType = "transient"
	}
	return r
}
