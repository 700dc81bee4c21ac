package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnlog/turnlog/events"
)

// instrumentation names turnlog to the tracer provider, as OpenTelemetry
// asks of instrumentation libraries.
const instrumentation = "github.com/turnlog/turnlog"

// Attribute keys of turnlog's own, beside the gen_ai.* ones: together they
// name the exact record of a call (`turnlog replay --inference` on the
// conversation, at the event).
const (
	// ConversationKey is the conversation the call belongs to.
	ConversationKey = attribute.Key("turnlog.conversation")
	// EventKey is the position (n) of the call's inference.started.
	EventKey = attribute.Key("turnlog.event")
	// InputHashKey is the recorded hash of the Turn the model received.
	InputHashKey = attribute.Key("turnlog.input_hash")
	// InferenceIDKey is the call's inference ID in the log.
	InferenceIDKey = attribute.Key("turnlog.inference_id")
	// PurposeKey says why a call was made aside from the answer
	// ("compaction"); absent on the answer's own calls.
	PurposeKey = attribute.Key("turnlog.purpose")
	// ThreadingKey says how a gateway call found its conversation
	// (explicit or inferred).
	ThreadingKey = attribute.Key("turnlog.threading")
)

var recordContent atomic.Bool

// RecordContent turns message content on spans on or off (off by
// default): the GenAI conventions make content opt-in, since prompts and
// answers may hold personal data that a tracing backend should not keep.
func RecordContent(on bool) { recordContent.Store(on) }

// ModelCall is what a span knows of a model call when it starts.
type ModelCall struct {
	Conversation string
	// Event is the n of the call's inference.started.
	Event       int
	InferenceID string
	InputHash   string
	Model       string
	// Provider is the gen_ai.provider.name: "openai", "anthropic", or an
	// engine's own name.
	Provider  string
	Purpose   string
	Threading string
	// Input is the call's input blocks, put on the span only when content
	// recording is on (RecordContent).
	Input []events.Block
	// Start is when the call began, when that was before the span could
	// be started (the gateway knows a call's event only once its input is
	// recorded, while the upstream already works); zero: now.
	Start time.Time
}

// CallResult is how a model call ended.
type CallResult struct {
	ResponseModel string
	ResponseID    string
	// InputTokens and OutputTokens are the usage the answer reported;
	// both 0 is none reported (a model call reads at least one token: an
	// OpenAI stream without include_usage, a body turnlog could not
	// read), and the span carries no gen_ai.usage attributes rather than
	// counts of 0, as replay says "no token counts reported".
	InputTokens  int
	OutputTokens int
	FinishReason string
	// Output is the answer's blocks, on the span only with RecordContent.
	Output []events.Block
	// Err is the failure, if the call failed; ErrorType names its class
	// (error.type), "_OTHER" when empty.
	Err       error
	ErrorType string
}

// Call is a model call's span in progress.
type Call struct {
	span trace.Span
}

// StartModelCall starts the span of a model call as a child of whatever
// span ctx carries (a chat request's, a gateway request's) and returns ctx
// with the new span, for the engine's own HTTP instrumentation to nest in.
// With no tracer provider set it returns ctx as it is and a nil *Call,
// whose methods do nothing.
func StartModelCall(ctx context.Context, c ModelCall) (context.Context, *Call) {
	if otel.GetTracerProvider() == unsetProvider {
		// Nothing would record the span: spare every call building it.
		// The context keeps the caller's span, as a span that records
		// nothing would carry it on.
		return ctx, nil
	}
	name := "chat"
	if c.Model != "" {
		name += " " + c.Model
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	if !c.Start.IsZero() {
		opts = append(opts, trace.WithTimestamp(c.Start))
	}
	ctx, span := otel.GetTracerProvider().Tracer(instrumentation).Start(ctx, name, opts...)
	if !span.IsRecording() {
		return ctx, &Call{span: span}
	}
	provider := c.Provider
	if provider == "" {
		provider = "turnlog"
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(provider),
		semconv.GenAIConversationID(c.Conversation),
		ConversationKey.String(c.Conversation),
		EventKey.Int(c.Event),
		InputHashKey.String(c.InputHash),
		InferenceIDKey.String(c.InferenceID),
	}
	if c.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(c.Model))
	}
	if c.Purpose != "" {
		attrs = append(attrs, PurposeKey.String(c.Purpose))
	}
	if c.Threading != "" {
		attrs = append(attrs, ThreadingKey.String(c.Threading))
	}
	if recordContent.Load() && len(c.Input) > 0 {
		attrs = append(attrs, attribute.String("gen_ai.input.messages", messagesJSON(c.Input)))
	}
	span.SetAttributes(attrs...)
	return ctx, &Call{span: span}
}

// unsetProvider is OpenTelemetry's global tracer provider before any is
// set (by tracing/otlp, or by a program that embeds turnlog): what its
// tracers start records nothing.
var unsetProvider = otel.GetTracerProvider()

// Recording reports whether the span records anything (a tracer is
// installed and sampled it): a caller can skip gathering a result that
// would be dropped.
func (c *Call) Recording() bool { return c != nil && c.span != nil && c.span.IsRecording() }

// End ends the span with the call's outcome.
func (c *Call) End(r CallResult) {
	if c == nil || c.span == nil {
		return
	}
	defer c.span.End()
	if !c.span.IsRecording() {
		return
	}
	var attrs []attribute.KeyValue
	if r.ResponseModel != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(r.ResponseModel))
	}
	if r.ResponseID != "" {
		attrs = append(attrs, semconv.GenAIResponseID(r.ResponseID))
	}
	if r.Err == nil {
		if r.InputTokens != 0 || r.OutputTokens != 0 {
			attrs = append(attrs, semconv.GenAIUsageInputTokens(r.InputTokens), semconv.GenAIUsageOutputTokens(r.OutputTokens))
		}
		if r.FinishReason != "" {
			attrs = append(attrs, semconv.GenAIResponseFinishReasons(r.FinishReason))
		}
		if recordContent.Load() && len(r.Output) > 0 {
			attrs = append(attrs, attribute.String("gen_ai.output.messages", outputJSON(r.Output, r.FinishReason)))
		}
	} else {
		typ := r.ErrorType
		if typ == "" {
			typ = errorType(r.Err)
		}
		attrs = append(attrs, semconv.ErrorTypeKey.String(typ))
		c.span.SetStatus(codes.Error, r.Err.Error())
	}
	c.span.SetAttributes(attrs...)
}

// errorType is error.type for an error that names no class of its own:
// a cancelled or timed-out call says so, anything else is "_OTHER", as the
// conventions ask.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}

// message is one entry of gen_ai.input.messages / gen_ai.output.messages,
// in the conventions' shape: a role and its parts.
type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	Name      string `json:"name,omitempty"`
	ID        string `json:"id,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// outputMessage is gen_ai.output.messages' entry: the model's answer, one
// message whose parts are its blocks, with why it ended, as the
// conventions' output message is.
type outputMessage struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason"`
}

// outputJSON renders a model's output blocks as the conventions' output
// messages: one assistant message holding each block as a part, and the
// finish reason the provider gave ("" when it gave none).
func outputJSON(blocks []events.Block, finish string) string {
	m := outputMessage{Role: "assistant", Parts: make([]part, 0, len(blocks)), FinishReason: finish}
	for _, b := range blocks {
		m.Parts = append(m.Parts, blockMessage(b).Parts...)
	}
	data, _ := json.Marshal([]outputMessage{m})
	return string(data)
}

// messagesJSON renders blocks as the conventions' messages, one message a
// block: the span shows what the model got without turnlog's own Turn
// format.
func messagesJSON(blocks []events.Block) string {
	msgs := make([]message, 0, len(blocks))
	for _, b := range blocks {
		msgs = append(msgs, blockMessage(b))
	}
	data, _ := json.Marshal(msgs)
	return string(data)
}

// blockMessage is one block as the conventions' message: its role and
// its one part.
func blockMessage(b events.Block) message {
	switch b.Kind {
	case events.KindSystem:
		return message{Role: "system", Parts: []part{{Type: "text", Content: b.Text}}}
	case events.KindUser:
		return message{Role: "user", Parts: []part{{Type: "text", Content: b.Text}}}
	case events.KindLLMText:
		return message{Role: "assistant", Parts: []part{{Type: "text", Content: b.Text}}}
	case events.KindReasoning:
		return message{Role: "assistant", Parts: []part{{Type: "reasoning", Content: b.Text}}}
	case events.KindToolCall:
		return message{Role: "assistant", Parts: []part{{Type: "tool_call", ID: b.CallID, Name: b.ToolName, Arguments: b.Arguments}}}
	case events.KindToolResult:
		return message{Role: "tool", Parts: []part{{Type: "tool_call_response", ID: b.CallID, Content: b.Text}}}
	}
	return message{Role: string(b.Kind), Parts: []part{{Type: "text", Content: b.Text}}}
}
