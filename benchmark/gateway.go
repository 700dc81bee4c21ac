package benchmark

// This file holds `turnlog bench --gateway`: the recording gateway's cost
// measured against calling a stand-in upstream directly and through a
// reverse proxy that records nothing (the floor any proxy pays).

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
)

// GatewayConfig sizes `turnlog bench --gateway`.
type GatewayConfig struct {
	// Calls is how many calls each target gets in the latency phase
	// (default 2000), in Rounds interleaved rounds (default 4).
	Calls, Rounds int
	// Concurrency is how many clients call at once (default 32).
	Concurrency int
	// Delay is how long the upstream takes before it answers (default
	// 20ms).
	Delay time.Duration
	// Saturation is how long each target is driven at saturation for
	// calls/s (default 3s, in saturationRounds interleaved rounds), by
	// SaturationClients clients (default 64) against an upstream that
	// answers at once.
	Saturation        time.Duration
	SaturationClients int
	Progress          io.Writer
}

func (c *GatewayConfig) defaults() {
	if c.Calls <= 0 {
		c.Calls = 2000
	}
	if c.Rounds <= 0 {
		c.Rounds = 4
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 32
	}
	if c.Delay <= 0 {
		c.Delay = 20 * time.Millisecond
	}
	if c.Saturation <= 0 {
		c.Saturation = 3 * time.Second
	}
	if c.SaturationClients <= 0 {
		c.SaturationClients = 64
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// GatewayResults are the figures of `turnlog bench --gateway --json`. The
// overheads are added latency over calling the upstream directly, under
// the same concurrent load.
type GatewayResults struct {
	GatewayOverheadP50Ms     float64 `json:"gateway_overhead_p50_ms"`
	GatewayOverheadP99Ms     float64 `json:"gateway_overhead_p99_ms"`
	PassthroughOverheadP50Ms float64 `json:"passthrough_overhead_p50_ms"`
	PassthroughOverheadP99Ms float64 `json:"passthrough_overhead_p99_ms"`
	GatewayCallsPerS         float64 `json:"gateway_calls_per_s"`
	PassthroughCallsPerS     float64 `json:"passthrough_calls_per_s"`
	GatewayTTFBOverheadMs    float64 `json:"gateway_ttfb_overhead_ms"`
	GatewayLogBytes200       int64   `json:"gateway_log_bytes_200"`
	GatewayRequestBytes200   int64   `json:"gateway_request_bytes_200"`

	// What was measured, for the reader.
	DirectP50Ms          float64 `json:"direct_p50_ms"`
	DirectP99Ms          float64 `json:"direct_p99_ms"`
	DirectCallsPerS      float64 `json:"direct_calls_per_s"`
	PassthroughTTFBMs    float64 `json:"passthrough_ttfb_overhead_ms"`
	Calls                int     `json:"calls"`
	Concurrency          int     `json:"concurrency"`
	UpstreamDelayMs      float64 `json:"upstream_delay_ms"`
	FirstRequestBytes    int     `json:"first_request_bytes"`
	SaturationClients    int     `json:"saturation_clients"`
	ChainLength          int     `json:"chain_length"`
	LogToRequestFraction float64 `json:"log_to_request_fraction"`
}

// target is one way of reaching the upstream.
type target struct {
	name string
	url  string // the base URL a client's SDK would take (…/v1)
}

// gatewayRig is the stand-in upstream, the pass-through proxy and the
// gateway on an embedded server, each on its own local port.
type gatewayRig struct {
	up          *upstream
	targets     []target // direct, passthrough, gateway
	log         *eventlog.Log
	eventStream string
	client      *http.Client
	teardown
}

// serve serves h on a local port and returns its URL.
func (r *gatewayRig) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	r.undo = append(r.undo, func() { srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

// transport is the HTTP client side of every hop: connections kept, as an
// SDK's and a proxy's are.
func transport(conns int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 4*conns, 4*conns
	return t
}

func startGatewayRig(ctx context.Context, conns int) (_ *gatewayRig, err error) {
	r := &gatewayRig{up: &upstream{}}
	defer func() {
		if err != nil {
			r.stop()
		}
	}()
	_, nc, log, err := r.startLog(ctx, "turnlog-bench-gateway-")
	if err != nil {
		return nil, err
	}
	r.log = log
	r.eventStream = r.log.Names().EventStreams()[0]
	threads, err := r.log.Threads(ctx)
	if err != nil {
		return nil, err
	}
	upURL, err := r.serve(r.up)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(upURL)
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = u.Host },
		Transport: transport(conns),
		// As the gateway's: streams are flushed at every write anyway.
	}
	passURL, err := r.serve(proxy)
	if err != nil {
		return nil, err
	}
	g, err := gateway.New(gateway.Config{Log: r.log, Connected: nc.IsConnected, Token: benchToken, Threads: threads,
		OpenAIUpstream: upURL + "/v1", OpenAIKey: "sk-bench-provider-key", Transport: transport(conns), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	gwURL, err := r.serve(g)
	if err != nil {
		return nil, err
	}
	r.targets = []target{{"direct", upURL + "/v1"}, {"passthrough", passURL + "/v1"}, {"gateway", gwURL + "/v1"}}
	r.client = &http.Client{Transport: transport(conns)}
	return r, nil
}

// RunGateway measures the gateway: see GatewayResults.
func RunGateway(ctx context.Context, cfg GatewayConfig) (GatewayResults, error) {
	cfg.defaults()
	say := func(f string, a ...any) { fmt.Fprintf(cfg.Progress, "bench --gateway: "+f+"\n", a...) }
	rig, err := startGatewayRig(ctx, max(cfg.Concurrency, cfg.SaturationClients))
	if err != nil {
		return GatewayResults{}, err
	}
	defer rig.stop()
	res := GatewayResults{Calls: cfg.Calls, Concurrency: cfg.Concurrency, UpstreamDelayMs: ms(cfg.Delay),
		SaturationClients: cfg.SaturationClients, ChainLength: chainLength, FirstRequestBytes: len(firstBody(0, false))}

	// Warm every hop's connections and the gateway's caches.
	rig.up.delay.Store(int64(cfg.Delay))
	for _, t := range rig.targets {
		if _, err := rig.drive(ctx, t, cfg.Concurrency, 2*cfg.Concurrency, 0, false); err != nil {
			return res, fmt.Errorf("warm up %s: %w", t.name, err)
		}
	}

	// Latency: the three targets in interleaved rounds, so that load from
	// elsewhere on the machine falls on all alike.
	say("latency: %d calls each through direct, passthrough and gateway, %d at once, upstream answering after %v", cfg.Calls, cfg.Concurrency, cfg.Delay)
	lat := map[string][]time.Duration{}
	ttfb := map[string][]time.Duration{}
	per := max(cfg.Calls/cfg.Rounds, 1)
	for round := range cfg.Rounds {
		for i := range rig.targets {
			t := rig.targets[(i+round)%len(rig.targets)]
			s, err := rig.drive(ctx, t, cfg.Concurrency, per, 0, false)
			if err != nil {
				return res, fmt.Errorf("%s: %w", t.name, err)
			}
			lat[t.name] = append(lat[t.name], s.total...)
			s, err = rig.drive(ctx, t, cfg.Concurrency, per/4+1, 0, true)
			if err != nil {
				return res, fmt.Errorf("%s, streamed: %w", t.name, err)
			}
			ttfb[t.name] = append(ttfb[t.name], s.first...)
		}
	}
	p := func(name string, q float64) float64 { return ms(quantile(lat[name], q)) }
	res.DirectP50Ms, res.DirectP99Ms = p("direct", 0.50), p("direct", 0.99)
	res.PassthroughOverheadP50Ms = p("passthrough", 0.50) - res.DirectP50Ms
	res.PassthroughOverheadP99Ms = p("passthrough", 0.99) - res.DirectP99Ms
	res.GatewayOverheadP50Ms = p("gateway", 0.50) - res.DirectP50Ms
	res.GatewayOverheadP99Ms = p("gateway", 0.99) - res.DirectP99Ms
	firstByte := func(name string) float64 { return ms(quantile(ttfb[name], 0.5)) }
	res.GatewayTTFBOverheadMs = firstByte("gateway") - firstByte("direct")
	res.PassthroughTTFBMs = firstByte("passthrough") - firstByte("direct")

	// Saturation: an upstream that answers at once, more clients than
	// cores; calls/s through each.
	say("saturation: %d clients for %v each, upstream answering at once", cfg.SaturationClients, cfg.Saturation)
	rig.up.delay.Store(0)
	rates := map[string][]float64{}
	for round := range saturationRounds {
		for i := range rig.targets {
			t := rig.targets[(i+round)%len(rig.targets)]
			s, err := rig.drive(ctx, t, cfg.SaturationClients, 0, cfg.Saturation/saturationRounds, false)
			if err != nil {
				return res, fmt.Errorf("%s at saturation: %w", t.name, err)
			}
			rates[t.name] = append(rates[t.name], float64(len(s.total))/s.elapsed.Seconds())
		}
	}
	res.DirectCallsPerS, res.PassthroughCallsPerS, res.GatewayCallsPerS = median(rates["direct"]), median(rates["passthrough"]), median(rates["gateway"])

	say("storage: one conversation of 200 calls through the gateway")
	if res.GatewayLogBytes200, res.GatewayRequestBytes200, err = rig.longConversation(ctx, 200); err != nil {
		return res, err
	}
	res.LogToRequestFraction = float64(res.GatewayLogBytes200) / float64(res.GatewayRequestBytes200)
	return res, nil
}

// saturationRounds is how many interleaved rounds share each target's
// time at saturation: short rounds, taken in turn, let a machine whose
// speed drifts (a shared one) weigh on every target alike.
const saturationRounds = 6

// samples are one drive's timings: each call's whole time and (streamed)
// its time to the first byte of the body.
type samples struct {
	total, first []time.Duration
	elapsed      time.Duration
}

// drive runs clients at once through t, each a chain of calls, until n
// calls are done (n > 0) or for d.
func (r *gatewayRig) drive(ctx context.Context, t target, clients, n int, d time.Duration, stream bool) (samples, error) {
	var (
		mu    sync.Mutex
		out   samples
		left  atomic.Int64
		first error
		wg    sync.WaitGroup
	)
	left.Store(int64(n))
	deadline := time.Now().Add(d)
	more := func() bool {
		if n > 0 {
			return left.Add(-1) >= 0
		}
		return time.Now().Before(deadline)
	}
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch := chain{id: int(chainIDs.Add(1))*1000 + c, stream: stream}
			for more() {
				total, fb, err := r.call(ctx, t, &ch)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				out.total = append(out.total, total)
				if stream {
					out.first = append(out.first, fb)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	return out, first
}

var chainIDs atomic.Int64

// call makes a chain's next call through t and reads the whole answer.
func (r *gatewayRig) call(ctx context.Context, t target, ch *chain) (total, firstByte time.Duration, err error) {
	body := ch.next()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url+"/chat/completions", bytesReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchToken)
	start := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		return 0, 0, fmt.Errorf("read the answer: %w", err)
	}
	firstByte = time.Since(start)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, 0, fmt.Errorf("read the answer: %w", err)
	}
	total = time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return total, firstByte, fmt.Errorf("%s answered %s", t.name, resp.Status)
	}
	ch.answered()
	return total, firstByte, nil
}

// longConversation sends one chain of n calls through the gateway, one
// after the other, and returns the bytes the event stream grew by and the
// bytes of the request bodies.
func (r *gatewayRig) longConversation(ctx context.Context, n int) (logBytes, requestBytes int64, err error) {
	s, err := r.log.JetStream().Stream(ctx, r.eventStream)
	if err != nil {
		return 0, 0, err
	}
	before, err := s.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	ch := chain{id: 999999, long: true}
	for range n {
		if _, _, err := r.call(ctx, r.targets[2], &ch); err != nil {
			return 0, 0, err
		}
		requestBytes += int64(ch.sent)
	}
	after, err := s.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	return int64(after.State.Bytes - before.State.Bytes), requestBytes, nil
}

func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}
