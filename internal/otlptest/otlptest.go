// Package otlptest is an OTLP/HTTP trace receiver for tests: it decodes
// what it receives with OpenTelemetry's own protobuf types
// (go.opentelemetry.io/proto/otlp), not turnlog's, so what a test reads is
// what any collector would.
package otlptest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver collects the spans exported to it.
type Receiver struct {
	// URL is the endpoint to set as OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	mu        sync.Mutex
	spans     []*tracepb.Span
	resources []*tracepb.ResourceSpans
	paths     []string
}

// Start runs a receiver until the test ends.
func Start(tb testing.TB) *Receiver {
	tb.Helper()
	rc := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	tb.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.paths = append(rc.paths, r.URL.Path)
	for _, rs := range req.ResourceSpans {
		rc.resources = append(rc.resources, rs)
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// Spans returns the spans received so far.
func (rc *Receiver) Spans() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...)
}

// Named returns the spans received so far with that name.
func (rc *Receiver) Named(name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range rc.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Paths are the URL paths the exports were posted to.
func (rc *Receiver) Paths() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.paths...)
}

// Resource returns the value of attribute key of the first resource that
// sent spans, "" when none did.
func (rc *Receiver) Resource(key string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.resources) == 0 || rc.resources[0].Resource == nil {
		return ""
	}
	for _, kv := range rc.resources[0].Resource.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// Attrs returns a span's attributes by key.
func Attrs(s *tracepb.Span) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}
