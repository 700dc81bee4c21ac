package tracing

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// RequestIDKey is the chat request a span serves.
const RequestIDKey = attribute.Key("turnlog.request")

// Span is a span of turnlog's own around a unit of work (a chat sent, a
// request served), under which the model calls' spans nest.
type Span struct{ span trace.Span }

// StartClient starts the span of a client operation (`turnlog chat`
// sending a request and waiting for its answer): the root of a trace when
// ctx carries none.
func StartClient(ctx context.Context, name, conversation string) (context.Context, *Span) {
	return start(ctx, name, trace.SpanKindClient, conversation, "")
}

// StartRequest starts the span of serving one chat request, as a child of
// the trace context the request's message carried (see Extract).
func StartRequest(ctx context.Context, conversation, requestID string) (context.Context, *Span) {
	return start(ctx, "process turnlog.chat", trace.SpanKindConsumer, conversation, requestID)
}

func start(ctx context.Context, name string, kind trace.SpanKind, conversation, requestID string) (context.Context, *Span) {
	ctx, span := otel.GetTracerProvider().Tracer(instrumentation).Start(ctx, name, trace.WithSpanKind(kind))
	if span.IsRecording() {
		span.SetAttributes(ConversationKey.String(conversation))
		if requestID != "" {
			span.SetAttributes(RequestIDKey.String(requestID))
		}
	}
	return ctx, &Span{span: span}
}

// SetRequestID names the request once it is known.
func (s *Span) SetRequestID(id string) {
	if s != nil && id != "" {
		s.span.SetAttributes(RequestIDKey.String(id))
	}
}

// Failed marks the span of ctx (a request's, see StartRequest) failed with
// reason: a request that ends in request.failed is handled, not an error
// of the worker's, and its span says how it ended all the same.
func Failed(ctx context.Context, reason string) {
	trace.SpanFromContext(ctx).SetStatus(codes.Error, reason)
}

// End ends the span; a non-nil err marks it failed.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	if err != nil {
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}
