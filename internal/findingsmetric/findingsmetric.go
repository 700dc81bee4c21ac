// Package findingsmetric defines turnlog_findings_total{rule} once for
// every part of turnlog that checks model calls as it records them with
// replay --check's rules (package check): the recording gateway and the
// workers. Each component counts the calls it recorded itself, in its own
// registry, as it counts its other series: serve runs a gateway and
// workers in one process and serves each registry at its own path, so a
// call's finding is counted once, by whoever recorded the call, and the
// installation's figure is the sum over the scraped paths.
package findingsmetric

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/turnlog/turnlog/check"
)

// Name is the series' name, for documentation and tests.
const Name = "turnlog_findings_total"

// Counter counts findings by rule.
type Counter struct {
	vec *prometheus.CounterVec
}

// New returns a Counter with no findings yet; register its Collector
// once, in the registry of the component that adds to it.
func New() *Counter {
	return &Counter{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: Name,
		Help: "Findings of replay --check's rules on the model calls this component recorded, by rule, as they were recorded (a fault later calls still carry is counted once, at the call that first received it).",
	}, []string{"rule"})}
}

// Collector is what a registry registers.
func (c *Counter) Collector() prometheus.Collector { return c.vec }

// Add counts one finding of rule.
func (c *Counter) Add(rule string) { c.vec.WithLabelValues(rule).Inc() }

// AddAll counts findings.
func (c *Counter) AddAll(fs []check.Finding) {
	for _, f := range fs {
		c.Add(string(f.Rule))
	}
}
