package gateway

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/findingsmetric"
)

// Metrics are the gateway's Prometheus series, in a registry of their own
// so that a gateway and workers can share a process.
type Metrics struct {
	registry  *prometheus.Registry
	calls     *prometheus.CounterVec
	errors    *prometheus.CounterVec
	added     prometheus.Histogram
	loads     *prometheus.CounterVec
	conflicts prometheus.Counter
	findings  *findingsmetric.Counter
	spooled   prometheus.Gauge
	forwarded *prometheus.CounterVec
	unstored  *prometheus.CounterVec
	threading *prometheus.CounterVec
	// references counts item references by whether they were read as
	// the items they name.
	references *prometheus.CounterVec
	// providerWrites counts changes to conversations the provider holds
	// made beside model calls (see providerwrites.go).
	providerWrites *prometheus.CounterVec
}

// NewMetrics returns a gateway's series, registered.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_gateway_calls_total",
			Help: "Model calls through the gateway (and import --calls, the spool), by API and outcome: finished, failed (the upstream or the response failed; recorded), unrecorded (the log refused or could not be reached, or the spool could not keep the call; see the error log), spooled (forwarded while NATS was away, kept in the spool for later), erased (not recorded, or not finished: its conversation was erased after the call was made, while it was spooled or in flight), abandoned (an earlier call left open, whose outcome its gateway never recorded, closed as failed by this one), background (a Responses API background response, queued: the call stays open until the app fetches its end through the gateway, which records it then, counted again as finished or failed).",
		}, []string{"api", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_gateway_errors_total",
			Help: "Calls the gateway answered with an error of its own, by reason: unauthorized (401), too_large (413), busy (503: no room for its body among the calls in flight, --max-inflight-bytes), unavailable (503: NATS away, or the spool full), upstream (502: the provider could not be reached), upstream_timeout (504: the provider did not begin to answer within --upstream-timeout), bad_request (400), misdirected (404: a path that shows the SDK's base URL is wrong, an OpenAI SDK's without /v1, an Anthropic SDK's with it, or a client appending /messages without it), refused (403: a browser's request from another site, or to a host name the listener does not answer, on serve's listener).",
		}, []string{"reason"}),
		added: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "turnlog_gateway_added_seconds",
			Help:    "Time a recorded call spent in the gateway beyond the upstream's own: its whole time minus the time from sending it upstream to the upstream's last byte.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_gateway_turn_loads_total",
			Help: "Where a call found its conversation's Turn: the gateway's cache (cache, trusted: a stale one is refused by the append's fence and the call loads), the log (log). A new conversation needs none.",
		}, []string{"source"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "turnlog_gateway_conflicts_total",
			Help: "Appends refused because the conversation moved on (concurrent calls of one conversation); each was planned again.",
		}),
		findings: findingsmetric.New(),
		spooled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turnlog_gateway_spool_bytes",
			Help: "Bytes the --record-optional spool holds, what counts against --spool-bytes: the calls waiting to be recorded, and the room held for the calls in flight (twice the request and 4 KiB each, until the answer is kept).",
		}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_gateway_unrecorded_forwards_total",
			Help: "Requests the gateway forwarded without recording them, on paths it does not record (a models list, a token count, anything else under /v1/), by kind: model_call (a POST whose path ends like a model call's, /chat/completions, /completions, /responses or /messages, but is not a recorded route, e.g. an Azure deployment's, or that creates a batch of model calls, /batches; each such path is also logged, once) or other.",
		}, []string{"kind"}),
		unstored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_gateway_unstored_total",
			Help: "Calls a part of which was too large for one NATS message (the server's max_payload), by part: input (the call's new content; recorded by its hash alone, as an unparsed call saying why), output (its answer; recorded as failed, saying so) or other_choices (the choices after the first of a Chat Completions answer of several; recorded finished with its first choice whole and the last others left out with their size). The app got the upstream's answer all the same.",
		}, []string{"part"}),
		threading: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_gateway_threading_total",
			Help: "Recorded calls by how they were threaded: explicit (Turnlog-Conversation, previous_response_id, a provider's conversation), inferred (by content: a continuation or a fork of a recorded call), new (a first call), unmatched (a new conversation although the input re-sends what a model wrote: the app changed the history it re-sent, trimmed or re-serialised answers, a sliding window, a changing system prompt; each app chat becomes many conversations; logged, at most once a minute; name the conversation with Turnlog-Conversation).",
		}, []string{"api", "threading"}),
		references: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_gateway_item_references_total",
			Help: "Item references in Responses API inputs ({\"type\": \"item_reference\"}: an app with store on sending the provider's earlier output back by ID), by outcome: resolved (read as the output item a recorded call produced, so the call continues its conversation) or unresolved (an item no call through the gateway produced, or an erased conversation's: recorded as sent, and the call starts a conversation of its own).",
		}, []string{"outcome"}),
		providerWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnlog_gateway_provider_writes_total",
			Help: "Changes an app made to a conversation OpenAI holds (the Conversations API) beside its model calls, by kind (created: POST /v1/conversations, its items; added: POST /v1/conversations/{id}/items; deleted: DELETE /v1/conversations/{id}/items/{item_id}) and outcome: recorded, unplaced (a deleted item the record cannot place: the record still holds it), unparsed (items not of the API's shape, which the provider took: the record lacks them), unrecorded (NATS away with --record-optional, the change too large for one NATS message, or the log refused: the record lacks the change).",
		}, []string{"kind", "outcome"}),
	}
	m.forwarded.WithLabelValues("model_call")
	m.forwarded.WithLabelValues("other")
	m.registry.MustRegister(m.calls, m.errors, m.added, m.loads, m.conflicts, m.findings.Collector(), m.spooled, m.forwarded, m.unstored, m.threading, m.references, m.providerWrites)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// countFindings counts recorded findings by their rule.
func (m *Metrics) countFindings(fs []events.Payload) {
	for _, f := range fs {
		if f, ok := f.(events.FindingRecorded); ok {
			m.findings.Add(f.Rule)
		}
	}
}
