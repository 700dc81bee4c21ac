// Package tracing puts turnlog's model calls into the traces teams already
// watch: one OpenTelemetry span per model call, named and attributed after
// the GenAI semantic conventions (gen_ai.*, still "development" status in
// OpenTelemetry: the keys may change), plus turnlog's own attributes that
// lead from a span back to the exact record (turnlog.conversation,
// turnlog.event: `turnlog replay --inference` takes them).
//
// The package uses only the OpenTelemetry API: without an SDK installed
// (see tracing/otlp, which cmd's serve, worker, gateway and chat install
// when OTEL_EXPORTER_OTLP_ENDPOINT is set) every span is a no-op and costs
// next to nothing. Trace context crosses NATS in message headers, in the
// W3C traceparent format, so a worker continues the trace of the client
// that sent the request.
package tracing
