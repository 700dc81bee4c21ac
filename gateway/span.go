package gateway

import (
	"errors"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/tracing"
)

// startSpan starts the trace span of a live call whose input is recorded
// (its inference.started is known), back-dated to when the gateway got the
// call, as a child of the caller's span when its request carried a
// traceparent. A call recorded after the fact (import, spool) gets none
// (a nil *tracing.Call, whose End does nothing).
func (r *Recorder) startSpan(p *Pending, in inputResult) *tracing.Call {
	if p.trace == nil {
		return nil
	}
	mc := tracing.ModelCall{
		Conversation: p.conv,
		Event:        in.started,
		InferenceID:  p.call.ID,
		Provider:     "openai",
		Threading:    p.call.Threading,
		Start:        p.started,
	}
	if p.api.Anthropic() {
		mc.Provider = "anthropic"
	}
	if req := p.call.Request; req != nil {
		mc.Model = req.Model
	}
	for _, e := range in.evs {
		if st, ok := e.Payload.(events.InferenceStarted); ok {
			mc.InputHash = st.InputHash
		}
	}
	if in.turn != nil {
		mc.Input = in.turn.Blocks
	}
	_, c := tracing.StartModelCall(p.trace, mc)
	return c
}

// spanResult is a call's outcome as its span records it.
func spanResult(o calls.Outcome) tracing.CallResult {
	var r tracing.CallResult
	if out := o.Output; out != nil {
		r = tracing.CallResult{ResponseModel: out.Model, ResponseID: out.ResponseID,
			InputTokens: out.PromptTokens, OutputTokens: out.CompletionTokens, FinishReason: out.StopReason,
			Output: out.Blocks()}
		if out.Error != "" {
			r.Err, r.ErrorType = errors.New(out.Error), "response_error"
		}
	}
	if o.Failure != "" {
		r.Err, r.ErrorType = errors.New(o.Failure), "upstream_error"
		if o.Transient {
			r.ErrorType = "transient"
		}
	}
	return r
}
