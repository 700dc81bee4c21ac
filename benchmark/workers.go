package benchmark

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/worker"
)

// WorkerResults are the end-to-end figures of `turnlog bench --workers`.
type WorkerResults struct {
	Workers       int `json:"workers"`
	Conversations int `json:"conversations"`
	Requests      int `json:"requests"`
	// EventsPerRequest is how many events a request wrote, plus the
	// request message itself.
	EventsPerRequest float64 `json:"events_per_request"`
	// MessagesPerRequest is how many log messages (steps) a request wrote,
	// plus the request message itself.
	MessagesPerRequest float64 `json:"messages_per_request"`
	RequestsPerS       float64 `json:"requests_per_s"`
	// RawBoundRequestsPerS is what raw JetStream sync publishing of the
	// same number of events per request allows (one message per event and
	// one for the request), with as many concurrent publishers as there
	// are workers: the bound issue 4 names.
	RawBoundRequestsPerS float64 `json:"raw_bound_requests_per_s"`
	RatioToBound         float64 `json:"ratio_to_bound"`
	// RawMessageBoundRequestsPerS is the stricter bound of raw publishes of
	// as many messages as turnlog writes (a step's events share one).
	RawMessageBoundRequestsPerS float64 `json:"raw_message_bound_requests_per_s"`
	RatioToMessageBound         float64 `json:"ratio_to_message_bound"`
	// Latency of one request on an idle system, send to request.completed.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	// AddedP99Ms is the p99 latency minus the time raw sync publishes of
	// the request's messages (not events: the stricter figure) take (their
	// p50 each): turnlog's own cost.
	AddedP50Ms float64 `json:"added_latency_p50_ms"`
	AddedP99Ms float64 `json:"added_latency_p99_ms"`
}

// WorkersConfig sizes a workers run.
type WorkersConfig struct {
	Workers       int
	Conversations int
	PerConv       int
	Progress      io.Writer
}

// RunWorkers measures requests per second end to end with the scripted
// engine and the default profile, against the raw-publish bound.
func RunWorkers(ctx context.Context, cfg WorkersConfig) (WorkerResults, error) {
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	if cfg.Conversations == 0 {
		cfg.Conversations = 100
	}
	if cfg.PerConv == 0 {
		cfg.PerConv = 10
	}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	res := WorkerResults{Workers: cfg.Workers, Conversations: cfg.Conversations, Requests: cfg.Conversations * cfg.PerConv}
	rig, err := startWorkers(ctx, cfg.Workers)
	if err != nil {
		return res, err
	}
	defer rig.stop()
	l := rig.log

	// Latency on an idle system, one request at a time.
	say("latency: 200 sequential requests")
	var lat []float64
	for i := 0; i < 200; i++ {
		conv := fmt.Sprintf("lat-%d", i%10)
		last, err := l.LastSeq(ctx, conv)
		if err != nil {
			return res, err
		}
		start := time.Now()
		req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: fmt.Sprintf("hello %d", i)})
		if err != nil {
			return res, err
		}
		done, err := worker.Await(ctx, l, conv, req.RequestID, last, 0)
		if err != nil {
			return res, err
		}
		// Up to the moment the worker wrote request.completed: the
		// client's own watch is not turnlog's latency.
		end := done.Events[len(done.Events)-1].Time
		lat = append(lat, float64(end.Sub(start).Microseconds())/1000)
	}

	// Throughput against the bound, in interleaved rounds so that both see
	// the same machine: the medians of the rounds are reported.
	var tps, raws, ratios, msgRatios []float64
	var pubLat []float64
	for round := 0; round < workerRounds; round++ {
		say("round %d of %d: %d conversations x %d requests, %d workers; then raw sync publishes from %d publishers",
			round+1, workerRounds, cfg.Conversations, cfg.PerConv, cfg.Workers, cfg.Workers)
		tp, err := throughput(ctx, rig, cfg, round, true)
		if err != nil {
			return res, err
		}
		rawPerS, lats, err := rawPublishes(ctx, l, cfg.Workers, 4000)
		if err != nil {
			return res, err
		}
		pubLat = append(pubLat, lats...)
		tps, raws = append(tps, tp.requestsPerS), append(raws, rawPerS)
		ratios = append(ratios, tp.requestsPerS/(rawPerS/tp.eventsPerRequest))
		msgRatios = append(msgRatios, tp.requestsPerS/(rawPerS/tp.messagesPerRequest))
		res.EventsPerRequest, res.MessagesPerRequest = tp.eventsPerRequest, tp.messagesPerRequest
		say("  %.0f requests/s; raw %.0f publishes/s; %.2f of the event bound, %.2f of the message bound",
			tp.requestsPerS, rawPerS, ratios[round], msgRatios[round])
	}
	rawPerS := median(raws)
	res.RequestsPerS = median(tps)
	res.RawBoundRequestsPerS = rawPerS / res.EventsPerRequest
	res.RatioToBound = median(ratios)
	res.RawMessageBoundRequestsPerS = rawPerS / res.MessagesPerRequest
	res.RatioToMessageBound = median(msgRatios)

	res.LatencyP50Ms, res.LatencyP99Ms = percentile(lat, 50), percentile(lat, 99)
	rawReq := percentile(pubLat, 50) * res.MessagesPerRequest
	res.AddedP50Ms, res.AddedP99Ms = res.LatencyP50Ms-rawReq, res.LatencyP99Ms-rawReq
	return res, nil
}

// workerRounds is how many throughput and bound measurements alternate.
// One round's ratio moves by ±10 % on a shared machine; the median of 5
// moves less than that of 3, for a second more per run.
const workerRounds = 5

type throughputResult struct {
	requestsPerS, eventsPerRequest, messagesPerRequest float64
}

// throughput sends every request of a round at once, conversations in
// parallel, and times until the last one completed.
// With countEvents, it loads every conversation afterwards to count the
// events a request wrote.
func throughput(ctx context.Context, rig *workerRig, cfg WorkersConfig, round int, countEvents bool) (throughputResult, error) {
	var res throughputResult
	l := rig.log
	requests := cfg.Conversations * cfg.PerConv
	conv := func(c int) string { return fmt.Sprintf("tp%d-%d", round, c) }
	before, err := streamMsgs(ctx, l)
	if err != nil {
		return res, err
	}
	handledBefore := rig.handled()
	// One client per conversation sends its requests in order without
	// waiting for answers, as a fleet of chat frontends would: a single
	// sender doing sync publishes would measure the sender.
	last := make([]string, cfg.Conversations)
	sendErr := make(chan error, cfg.Conversations)
	var senders sync.WaitGroup
	start := time.Now()
	for c := 0; c < cfg.Conversations; c++ {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for r := 0; r < cfg.PerConv; r++ {
				req := worker.Request{Conversation: conv(c), RequestID: ulid.Make().String(), Text: fmt.Sprintf("message %d", r)}
				if _, err := worker.Send(ctx, l, req); err != nil {
					sendErr <- err
					return
				}
				last[c] = req.RequestID
			}
		}()
	}
	senders.Wait()
	close(sendErr)
	if err := <-sendErr; err != nil {
		return res, err
	}
	// The workers' own count says when they are done, at the cost of an
	// atomic load: asking the log every 2 ms, as this did before, cost
	// about 1 % of the round's CPU. The log has the last word below.
	rig.awaitHandled(ctx, handledBefore+int64(requests))
	took := time.Since(start)
	late := false // the count said done, the log not yet
	for c := 0; c < cfg.Conversations; c++ {
		for {
			tail, err := l.Last(ctx, conv(c))
			if err != nil {
				return res, err
			}
			if tail.Cause == last[c] && tail.Closed() {
				break
			}
			late = true
			time.Sleep(2 * time.Millisecond)
		}
	}
	if late {
		// A request ended without an ack, say: the round lasted until the
		// log showed every conversation done.
		took = time.Since(start)
	}
	after, err := streamMsgs(ctx, l)
	if err != nil {
		return res, err
	}
	res.requestsPerS = float64(requests) / took.Seconds()
	res.messagesPerRequest = float64(after-before)/float64(requests) + 1
	if !countEvents {
		return res, nil
	}
	evs := 0
	for c := 0; c < cfg.Conversations; c++ {
		turn, err := l.Load(ctx, conv(c))
		if err != nil {
			return res, err
		}
		evs += turn.Events
	}
	res.eventsPerRequest = float64(evs)/float64(requests) + 1
	return res, nil
}

// rawPublishes is the bound: n raw sync publishes (300 bytes, about an
// event's size) from each of publishers goroutines. It returns publishes
// per second and each publish's latency in ms.
func rawPublishes(ctx context.Context, l *eventlog.Log, publishers, n int) (float64, []float64, error) {
	sample := make([]byte, 300)
	var lat []float64
	var mu sync.Mutex
	var pw sync.WaitGroup
	errs := make(chan error, publishers)
	js := l.JetStream()
	start := time.Now()
	for p := 0; p < publishers; p++ {
		pw.Add(1)
		go func(p int) {
			defer pw.Done()
			mine := make([]float64, 0, n)
			for i := 0; i < n; i++ {
				t := time.Now()
				if _, err := js.Publish(ctx, l.Names().EventsSubject(fmt.Sprintf("raw-%d", p)), sample); err != nil {
					errs <- fmt.Errorf("raw publish: %w", err)
					return
				}
				mine = append(mine, float64(time.Since(t).Microseconds())/1000)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(p)
	}
	pw.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, nil, err
	}
	return float64(n*publishers) / time.Since(start).Seconds(), lat, nil
}

func streamMsgs(ctx context.Context, l *eventlog.Log) (uint64, error) {
	s, err := l.JetStream().Stream(ctx, l.Names().EventsStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

func percentile(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	i := (len(s) - 1) * p / 100
	return s[i]
}
