package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/turnlog/turnlog/tracing"
	"github.com/turnlog/turnlog/tracing/otlp"
)

// otelFlags are the OpenTelemetry settings of the commands that make or
// serve model calls (serve, worker, gateway). The endpoint and everything
// else come from the standard OTEL_* variables.
type otelFlags struct {
	content bool
}

func (f *otelFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.content, "otel-content", false, "put message content (the model's input and output) on the model calls' trace spans; off by default, as the GenAI conventions ask (spans go to OTEL_EXPORTER_OTLP_ENDPOINT; see docs/observability.md)")
}

// startTracing installs the OTLP trace exporter when the environment names
// an endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or _TRACES_ENDPOINT), says so on
// errOut, and returns the function that flushes the last spans; without an
// endpoint it installs nothing and the returned function does nothing.
func startTracing(ctx context.Context, service string, content bool, errOut io.Writer) (stop func(), err error) {
	if !otlp.Enabled() {
		return func() {}, nil
	}
	shutdown, err := otlp.Setup(ctx, service)
	if err != nil {
		return nil, err
	}
	installExportErrors(errOut)
	tracing.RecordContent(content)
	if content {
		fmt.Fprintln(errOut, "turnlog: OpenTelemetry: exporting model-call spans WITH message content (--otel-content)")
	} else {
		fmt.Fprintln(errOut, "turnlog: OpenTelemetry: exporting model-call spans (no message content; --otel-content adds it)")
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			fmt.Fprintf(errOut, "turnlog: OpenTelemetry: the last spans were not exported: %v\n", err)
		}
	}, nil
}
