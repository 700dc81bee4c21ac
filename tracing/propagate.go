package tracing

import (
	"context"
	"net/textproto"

	"go.opentelemetry.io/otel/propagation"
)

// propagator is W3C Trace Context (traceparent, tracestate): what every
// OpenTelemetry SDK and most proxies speak. It is used directly rather
// than through otel's global propagator, so a trace crosses NATS whatever
// the program installed.
var propagator = propagation.TraceContext{}

// Inject writes ctx's trace context into h, the headers of a NATS message
// or an HTTP request (both are map[string][]string), so whoever receives
// it continues the trace.
func Inject(ctx context.Context, h map[string][]string) {
	propagator.Inject(ctx, headerCarrier(h))
}

// Extract returns ctx with the remote trace context that h carries, if
// any: the spans started under it are children of the sender's span.
func Extract(ctx context.Context, h map[string][]string) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, headerCarrier(h))
}

// headerCarrier adapts headers to the propagator. NATS headers keep the
// case they were written with, HTTP headers are canonical: Get tries the
// name as given, then canonical, so both work.
type headerCarrier map[string][]string

func (c headerCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	if v := c[textproto.CanonicalMIMEHeaderKey(key)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { c[key] = []string{value} }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
