package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/internal/bearer"
	"github.com/turnlog/turnlog/tracing"
)

// Gateway is the recording gateway as an http.Handler for /v1/ paths.
type Gateway struct {
	cfg   Config
	token bearer.Token
	rec   *Recorder
	// local is the threading index of the calls this gateway recorded or
	// spooled, what threads calls while NATS is away.
	local     *calls.Threads
	spool     *spool
	openai    *httputil.ReverseProxy
	anthropic *httputil.ReverseProxy
	inFlight  *inFlight
	// unreachable is set while calls are refused because NATS is away
	// (without --record-optional), so that the log says it once an
	// outage, not once a call.
	unreachable atomic.Bool
	// warned are the paths of model calls forwarded unrecorded that the
	// log named already (see forwardUnrecorded).
	warnedMu sync.Mutex
	warned   map[string]bool
	// stopping is set once Run's context ends: the process is shutting
	// down, and the calls still in flight when its HTTP server closes
	// their connections are cut by turnlog, not by their clients.
	stopping atomic.Bool
	// life ends with stopping: what a call waits for while the gateway
	// runs (lookupContext) is given up once it stops.
	life    context.Context
	endLife context.CancelFunc
	// watch holds the background responses Run asks the provider about
	// (nil without a managed OpenAI key, or with BackgroundPoll < 0).
	watch *backgroundWatch
	// badEntries are the entries of Config.Background, not written by a
	// gateway, that the log named already.
	badEntries sync.Map
}

// New builds a Gateway.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Connected == nil {
		return nil, errors.New("gateway: Config.Connected is required")
	}
	if msg := openAIUpstreamDoubt(cfg.OpenAIUpstream); msg != "" {
		cfg.Logger.Warn(msg)
	}
	local := calls.NewMemStore(100000)
	if m, ok := cfg.Threads.(*calls.MemStore); ok {
		local = m
	} else {
		cfg.Threads = mirrorStore{shared: cfg.Threads, local: local}
	}
	g := &Gateway{cfg: cfg, token: bearer.NewToken(cfg.Token), rec: newRecorder(&cfg), local: calls.NewThreads(local),
		inFlight: newInFlight(cfg.MaxInFlightBytes, cfg.InFlightWait), warned: map[string]bool{}}
	g.life, g.endLife = context.WithCancel(context.Background())
	g.rec.local, g.rec.localStore = g.local, local
	if cfg.OpenAIKey != "" && cfg.BackgroundPoll > 0 {
		g.watch = newBackgroundWatch()
	}
	if lv, ok := cfg.Log.(liveness); ok {
		// Answered for as long as the log's connection lives: another
		// gateway finding a call of this one unfinished leaves it open
		// while this one runs.
		g.rec.instance = ulid.Make().String()
		if _, err := lv.AnswerAlive(g.rec.instance); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	if cfg.RecordOptional {
		var err error
		if g.spool, err = openSpool(cfg.SpoolDir, cfg.SpoolBytes, cfg.Metrics, g.rec.parse, cfg.Logger); err != nil {
			return nil, err
		}
		g.spool.recorded = g.watchSpooled
		g.spool.inFlight = g.inFlight
	}
	cfg.Transport = timedTransport{next: cfg.Transport, timeout: cfg.UpstreamTimeout}
	var err error
	if g.openai, err = g.proxy(cfg.OpenAIUpstream, true, cfg.Transport); err != nil {
		return nil, err
	}
	if g.anthropic, err = g.proxy(cfg.AnthropicUpstream, false, cfg.Transport); err != nil {
		return nil, err
	}
	return g, nil
}

// Run follows erasures (an erased conversation leaves the gateway's
// memory: Recorder.Forget), asks the provider how the background
// responses the app does not fetch through the gateway ended (with a
// managed OpenAI key: see Config.BackgroundPoll), and records the calls
// the spool holds (--record-optional) whenever NATS is up, until ctx
// ends; meanwhile it says it runs (turnlog status lists it). Then it
// releases the spool's directory, once the calls spooled in flight have
// their answers in it (the server ends them; calls that would go to the
// spool once ctx has ended are answered 503).
func (g *Gateway) Run(ctx context.Context) {
	// Stopping as soon as ctx ends, and at the latest when Run returns.
	defer g.stop()
	defer context.AfterFunc(ctx, g.stop)()
	if el, ok := g.cfg.Log.(erasures); ok {
		// An erased conversation leaves the gateway's memory too.
		if stop, err := el.OnErase(g.rec.Forget); err != nil {
			g.cfg.Logger.Warn("gateway: erasures not followed; an erased conversation stays in memory until its caches let it go", "err", err)
		} else {
			defer stop()
		}
	}
	var running sync.WaitGroup
	defer running.Wait()
	running.Go(func() { g.sayRunning(ctx) })
	running.Go(func() { g.rec.closeUnclosed(ctx) })
	if g.watch != nil {
		running.Go(func() { g.followBackground(ctx) })
	}
	if g.spool == nil {
		<-ctx.Done()
		return
	}
	// Once the calls it took in are whole in it: the server ends them
	// after Run.
	defer g.spool.release()
	g.spool.run(ctx, g.rec, g.cfg.Connected, 250*time.Millisecond)
}

// erasures is the part of *eventlog.Log that announces erased
// conversations.
type erasures interface {
	OnErase(fn func(conversation string)) (stop func(), err error)
}

// Metrics returns the gateway's Prometheus series.
func (g *Gateway) Metrics() *Metrics { return g.cfg.Metrics }

// Recorder returns the gateway's recorder (import --calls and the spool
// record through it).
func (g *Gateway) Recorder() *Recorder { return g.rec }

// ServeHTTP serves /v1/ paths: the three recorded routes, everything else
// forwarded unrecorded, but for paths that show a wrong base URL (see
// Handles), answered 404 with what to fix.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api, recorded := calls.APIOfPath(r.URL.Path)
	compact := !recorded && strings.TrimSuffix(r.URL.Path, "/") == calls.CompactPath
	if compact {
		api, recorded = calls.Responses, true
	}
	recorded = recorded && r.Method == http.MethodPost
	anthropic := api.Anthropic()
	if !recorded {
		anthropic = anthropicHeaders(r.Header)
		api = calls.ChatCompletions
		if anthropic {
			api = calls.Messages
		}
	}
	if g.cfg.Guard != nil {
		if msg := g.cfg.Guard(r); msg != "" {
			g.cfg.Metrics.errors.WithLabelValues("refused").Inc()
			writeError(w, anthropic, http.StatusForbidden, msg)
			return
		}
	}
	// Before authorization: what the answer says (the base URL an SDK
	// takes, as the docs and the start-up banner do) leaks nothing,
	// nothing is forwarded, and the app is told the mistake that would
	// remain once its token were right.
	if g.misdirected(w, r) {
		return
	}
	if msg := g.authorize(r.Header, anthropic, g.cfg.providerKey(api)); msg != "" {
		if !anthropic {
			w.Header().Set("WWW-Authenticate", `Bearer realm="turnlog"`)
		}
		g.cfg.Metrics.errors.WithLabelValues("unauthorized").Inc()
		writeError(w, anthropic, http.StatusUnauthorized, msg)
		return
	}
	proxy := g.openai
	if anthropic {
		proxy = g.anthropic
	}
	if !recorded && !anthropic {
		if pw, ok := providerWriteOf(r); ok {
			g.forwardProviderWrite(w, r, proxy, pw)
			return
		}
		if id, streamed := backgroundFetchOf(r); streamed {
			g.forwardBackgroundStream(w, r, proxy, id)
			return
		} else if id != "" {
			g.forwardBackgroundFetch(w, r, proxy, id)
			return
		}
	}
	if !recorded {
		g.forwardUnrecorded(r)
		proxy.ServeHTTP(w, r)
		return
	}
	started := time.Now()
	want := r.ContentLength
	if want < 0 || want > g.cfg.MaxBody {
		want = g.cfg.MaxBody + 1 // the most readBody reads
	}
	held, err := g.inFlight.reserve(r.Context(), want)
	if err != nil && !errors.Is(err, errBusy) {
		return // the client went away while it waited
	}
	if err != nil {
		g.cfg.Metrics.errors.WithLabelValues("busy").Inc()
		w.Header().Set("Retry-After", "1")
		writeError(w, anthropic, http.StatusServiceUnavailable, err.Error()+"; nothing was forwarded; retry shortly")
		return
	}
	defer held.release()
	body, err := readBody(r, g.cfg.MaxBody)
	if err != nil {
		writeError(w, anthropic, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	held.shrink(int64(len(body)))
	if int64(len(body)) > g.cfg.MaxBody {
		g.cfg.Metrics.errors.WithLabelValues("too_large").Inc()
		writeError(w, anthropic, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the request body is larger than this gateway's limit of %d bytes (--max-body); nothing was forwarded", g.cfg.MaxBody))
		return
	}
	st := &state{api: api, anthropic: anthropic, started: started, secrets: credentials(r.Header), account: openAIAccount(r.Header)}
	offline := !g.cfg.Connected() || (g.spool != nil && g.spool.waiting())
	if offline && g.spool == nil {
		if !g.unreachable.Swap(true) {
			g.cfg.Logger.Warn("gateway: NATS is unreachable: calls are answered 503 and not forwarded until it is back (--record-optional forwards them and records them then)")
		}
		g.cfg.Metrics.errors.WithLabelValues("unavailable").Inc()
		writeError(w, anthropic, http.StatusServiceUnavailable,
			"turnlog cannot record this call: its NATS server is unreachable, and calls are not forwarded unrecorded; retry shortly")
		return
	}
	if offline {
		// Read (for threading) only if reading it fits, as when NATS is up.
		unread, ok := g.holdReading(w, r, anthropic, body, held)
		if !ok {
			return
		}
		var shared *calls.Threads
		if g.cfg.Connected() {
			shared = g.rec.threads
		}
		lookup, cancel := g.lookupContext(r.Context())
		sc, err := g.spool.admit(lookup, api, body, compact, calls.HeadersOf(r.Header), openAIAccount(r.Header), r.Header.Get(ConversationHeader), g.local, shared, unread != "")
		cancel()
		if err != nil {
			g.refuse(w, anthropic, err)
			return
		}
		st.spooled = sc
	} else {
		if g.unreachable.Load() && g.unreachable.Swap(false) {
			g.cfg.Logger.Info("gateway: NATS is reachable again: calls are forwarded and recorded")
		}
		if conv := r.Header.Get(ConversationHeader); conv != "" {
			if err := g.rec.stillDamaged(r.Context(), conv); err != nil {
				g.cfg.Metrics.errors.WithLabelValues("quarantined").Inc()
				writeError(w, anthropic, http.StatusUnprocessableEntity, "turnlog cannot record calls of this conversation, so nothing was forwarded: "+err.Error())
				return
			}
		}
		unread, ok := g.holdReading(w, r, anthropic, body, held)
		if !ok {
			return
		}
		p, err := g.rec.Begin(r.Context(), Call{API: api, Body: body, Conversation: r.Header.Get(ConversationHeader),
			Trace: tracing.Extract(r.Context(), r.Header), Deferred: true, Compact: compact, Headers: calls.HeadersOf(r.Header), Unread: unread})
		if err != nil {
			g.refuse(w, anthropic, err)
			return
		}
		st.pending = p
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	proxy.ServeHTTP(w, r)
	if !st.done() {
		// The proxy ended without a response body to finish (an error
		// handled, or a panic recovered by net/http).
		_ = st.finish(r.Context(), g, calls.Outcome{Failure: "the call ended without a response"})
	}
	if st.upstream > 0 {
		g.cfg.Metrics.added.Observe((time.Since(started) - st.upstream).Seconds())
	}
}

// holdReading holds among the bytes in flight what reading the call's
// body into blocks takes, so that the bound is on memory, not on bodies
// alone (a body of a great many tiny messages takes tens of times its
// size once read). A call that would take more than the gateway may hold
// for all its calls is forwarded and recorded by its hash: unread says
// why. ok is false when the call was answered (no room in time) or its
// client went away.
func (g *Gateway) holdReading(w http.ResponseWriter, r *http.Request, anthropic bool, body []byte, held *reservation) (unread string, ok bool) {
	switch need := readingBytes(body); {
	case need > g.inFlight.limit:
		g.cfg.Logger.Warn("gateway: call too costly to read; recorded by its hash alone", "conversation", r.Header.Get(ConversationHeader), "bytes", len(body), "reading_bytes", need)
		return g.inFlight.unreadReason(need, len(body)), true
	case !held.grow(r.Context(), need):
		if r.Context().Err() != nil {
			return "", false // the client went away while it waited
		}
		g.cfg.Metrics.errors.WithLabelValues("busy").Inc()
		w.Header().Set("Retry-After", "1")
		writeError(w, anthropic, http.StatusServiceUnavailable, errBusy.Error()+"; nothing was forwarded; retry shortly")
		return "", false
	}
	return "", true
}

// refuse answers a call that cannot be recorded before it is forwarded:
// 400 for a conversation that cannot be one, 503 otherwise (the spool
// full).
func (g *Gateway) refuse(w http.ResponseWriter, anthropic bool, err error) {
	var idErr *ConversationIDError
	if errors.As(err, &idErr) {
		g.cfg.Metrics.errors.WithLabelValues("bad_request").Inc()
		writeError(w, anthropic, http.StatusBadRequest, "the "+ConversationHeader+" header: "+idErr.Error())
		return
	}
	g.cfg.Metrics.errors.WithLabelValues("unavailable").Inc()
	g.cfg.Logger.Warn("gateway: call refused", "err", err)
	writeError(w, anthropic, http.StatusServiceUnavailable, "turnlog cannot record this call, so it was not forwarded: "+err.Error()+"; retry shortly")
}
