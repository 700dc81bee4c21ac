package worker

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/turnlog/turnlog/internal/findingsmetric"
)

// Metrics are a worker's Prometheus series. Each worker has its own
// registry, so several workers can run in one process (serve, tests).
type Metrics struct {
	registry     *prometheus.Registry
	requests     *prometheus.CounterVec
	redeliveries prometheus.Counter
	conflicts    prometheus.Counter
	// storageFull counts the attempts at a request that found JetStream's
	// storage full; the request waits in the worker's hands meanwhile.
	storageFull prometheus.Counter
	stepSeconds prometheus.Histogram
	inFlight    prometheus.Gauge
	loads       *prometheus.CounterVec
	deadLetters prometheus.Counter
	cacheBytes  prometheus.Gauge
	cacheTurns  prometheus.Gauge
	snapshots   *prometheus.CounterVec
	// findings counts the findings of the calls this worker made
	// (findings.go).
	findings *findingsmetric.Counter

	// The series every request touches, looked up once: a label lookup
	// hashes the label values on every call.
	completed, cacheLoads prometheus.Counter
}

func newMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_requests_total",
			Help: "Chat requests handled, by outcome (completed, failed, dead_lettered, retried, handed_back, erased).",
		}, []string{"outcome"}),
		redeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "turnlog_redeliveries_total",
			Help: "Requests received more than once (after a crash, a timeout or a hand-back).",
		}),
		storageFull: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "turnlog_storage_full_total",
			Help: "Attempts at a request that found JetStream's storage full; the request is held and tried again until space is freed.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "turnlog_conflicts_total",
			Help: "Appends refused because the conversation moved on (optimistic concurrency).",
		}),
		stepSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "turnlog_step_seconds",
			Help:    "Time to append one step to the log.",
			Buckets: prometheus.ExponentialBuckets(0.00002, 2, 16),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turnlog_requests_in_flight",
			Help: "Requests being processed now.",
		}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_turn_loads_total",
			Help: "Where a request's starting Turn came from: the worker's cache (cache), the cache plus the steps other workers wrote since (cache_and_tail), the log (log: snapshot and tail), or nowhere, the conversation having no message yet (new). Many log and cache_and_tail loads mean requests of a conversation keep moving between workers.",
		}, []string{"source"}),
		deadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "turnlog_dead_letters_total",
			Help: "Requests this worker stored as dead letters: they could not end in a conversation (see turnlog status --dead).",
		}),
		cacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turnlog_turn_cache_bytes",
			Help: "Estimated bytes of memory the Turns in the worker's cache hold (bounded by --cache-bytes).",
		}),
		cacheTurns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turnlog_turn_cache_turns",
			Help: "Turns in the worker's cache.",
		}),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_snapshots_saved_total",
			Help: "Snapshots the worker saved, by reason: interval (a request passed a multiple of the snapshot interval), evicted (the cache let go of the Turn), idle (the Turn was not used for --idle-snapshot), shutdown; and those not saved: failed, skipped (the queue of saves was full).",
		}, []string{"reason"}),
		findings: findingsmetric.New(),
	}
	m.registry.MustRegister(m.findings.Collector(), m.requests, m.redeliveries, m.conflicts, m.storageFull, m.stepSeconds, m.inFlight, m.loads, m.deadLetters,
		m.cacheBytes, m.cacheTurns, m.snapshots,
		prometheus.NewGoCollector())
	m.completed = m.requests.WithLabelValues("completed")
	// Every outcome's series from the start, at 0: an alert on a rate
	// of erased or dead-lettered requests has a series to watch.
	for _, o := range []string{"failed", "dead_lettered", "retried", "handed_back", "erased"} {
		m.requests.WithLabelValues(o)
	}
	m.cacheLoads = m.loads.WithLabelValues("cache")
	return m
}

// countStoredDeadLetters adds the gauge of dead letters stored in the
// installation (all workers' and earlier runs'), read from the stream at
// each scrape: the counter above restarts with the worker, the stream
// does not.
func (m *Metrics) countStoredDeadLetters(count func(context.Context) (uint64, error)) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "turnlog_dead_letters_stored",
		Help: "Dead letters stored in the installation (turnlog status --dead lists them); NaN when the stream cannot be read.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := count(ctx)
		if err != nil {
			return math.NaN()
		}
		return float64(n)
	}))
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
