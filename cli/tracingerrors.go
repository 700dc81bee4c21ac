package cli

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
)

// exportErrorEvery is how often a failing trace export is said again:
// the first failure is printed, those within the next interval counted.
const exportErrorEvery = time.Minute

// exportErrors says on w, in turnlog's words and where the spans were to
// go, that spans could not be exported (the SDK drops them), at most once
// every exportErrorEvery with the count of failures since: the OpenTelemetry
// SDK's own report is a line of Go's default logger per failure, outside
// the command's log, naming no endpoint.
type exportErrors struct {
	w        io.Writer
	endpoint string
	now      func() time.Time

	mu     sync.Mutex
	last   time.Time
	missed int
}

func (e *exportErrors) Handle(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if !e.last.IsZero() && now.Sub(e.last) < exportErrorEvery {
		e.missed++
		return
	}
	more := ""
	if e.missed > 0 {
		more = fmt.Sprintf(" (and %d failures more since the last said)", e.missed)
	}
	fmt.Fprintf(e.w, "turnlog: OpenTelemetry: spans not exported to %s, dropped%s: %v\n", e.endpoint, more, err)
	e.last, e.missed = now, 0
}

// installExportErrors makes the OpenTelemetry SDK report its errors
// through exportErrors on w.
func installExportErrors(w io.Writer) {
	endpoint := redactEndpoint(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if endpoint == "" {
		endpoint = redactEndpoint(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) + " (/v1/traces)"
	}
	h := &exportErrors{w: w, endpoint: endpoint, now: time.Now}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(h.Handle))
}

// redactEndpoint is an OTLP endpoint as a log line may show it: the
// password of its user info as xxxxx and its query (where a collector's
// key may be) left out.
func redactEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an endpoint that is not a URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.Redacted()
}
