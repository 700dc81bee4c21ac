// Package otlp installs OpenTelemetry's SDK with an OTLP/HTTP trace
// exporter when the standard environment asks for one, so the spans of
// package tracing reach a collector, Jaeger, Tempo or any OTLP backend.
// It is separate from package tracing so that a program that only records
// (a library user's, turnlog's own tests) does not link the SDK.
package otlp

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Enabled reports whether the environment names an OTLP endpoint for
// traces: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT.
// Without one, turnlog exports nothing and installs nothing.
func Enabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Setup installs a tracer provider that batches spans to the OTLP/HTTP
// endpoint the environment names, as the global one, and returns the
// function that flushes and stops it (call it before the program exits, or
// the last spans are lost). service is the default service.name;
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it. The SDK
// honours the other standard variables itself: OTEL_TRACES_SAMPLER (and
// _ARG), OTEL_BSP_SCHEDULE_DELAY and the rest of OTEL_BSP_*,
// OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION.
//
// When Enabled is false, Setup installs nothing and returns a no-op.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: the OTLP/HTTP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: the resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}
