package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/templates"
)

// ActorWorker is the actor of the events the worker itself records.
const ActorWorker = "worker"

// Config configures a worker. Log, Conn and Profiles are required.
type Config struct {
	Log      *eventlog.Log
	Conn     *nats.Conn
	Profiles profile.Set
	// Tools offered to the model (nil: the scripted engine's demo tools).
	Tools *engine.Tools
	// Name identifies the worker in logs and `turnlog status`.
	Name string
	// AckWait is how long a request may go without a sign of life before
	// JetStream gives it to another worker (default 60s; the worker
	// reports progress every AckWait/3 while it works).
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one request (default 5): a request
	// that keeps failing transiently ends as request.failed, never retried
	// forever.
	MaxDeliver int
	// MaxTextBytes bounds a request's text (default 64 KiB).
	MaxTextBytes int
	// ShutdownGrace is how long Run waits for requests in hand after its
	// context ends before handing them back (default 30s).
	ShutdownGrace time.Duration
	Logger        *slog.Logger
	// Fault, for tests, is called at named points of a request ("user",
	// "step", "completed"); an error there makes the worker drop the
	// request on the floor as if it had crashed: no ack, no more events.
	Fault func(point string) error
}

// Validate fills defaults and reports what is missing.
func (c *Config) Validate() error {
	if c.Log == nil || c.Conn == nil {
		return errors.New("worker: a log and a NATS connection are required")
	}
	if len(c.Profiles) == 0 {
		return errors.New("worker: no profiles")
	}
	if _, ok := c.Profiles[profile.DefaultName]; !ok {
		return fmt.Errorf("worker: no %q profile; requests without a profile need one", profile.DefaultName)
	}
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.AckWait == 0 {
		c.AckWait = 60 * time.Second
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 5
	}
	if c.MaxTextBytes == 0 {
		c.MaxTextBytes = DefaultMaxTextBytes
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Worker serves chat requests. Create it with New and start it with Run.
type Worker struct {
	cfg      Config
	names    eventlog.Names
	profiles map[string]*profile.Built
	metrics  *Metrics
	cache    *turnCache
	log      *slog.Logger

	handled  atomic.Int64
	started  time.Time
	inflight sync.WaitGroup
}

// New builds the profiles' chains and the worker.
func New(cfg Config) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:      cfg,
		names:    cfg.Log.Names(),
		profiles: map[string]*profile.Built{},
		metrics:  newMetrics(),
		cache:    newTurnCache(1024),
		log:      cfg.Logger.With("worker", cfg.Name),
		started:  time.Now(),
	}
	store := templates.New(cfg.Log)
	for name, p := range cfg.Profiles {
		if p.Templates == nil {
			p.Templates = store // the "template" middleware's global template
		}
		b, err := p.Build(w.log, cfg.Tools)
		if err != nil {
			return nil, fmt.Errorf("worker: profile %q: %w", name, err)
		}
		w.profiles[name] = b
	}
	return w, nil
}

// Metrics returns the worker's Prometheus series.
func (w *Worker) Metrics() *Metrics { return w.metrics }

// ConsumerName is the durable consumer of partition p, shared by all
// workers of an installation.
func ConsumerName(names eventlog.Names, p int) string {
	return fmt.Sprintf("%s_worker_p%d", strings.ToLower(names.RequestsStream), p)
}

// Run consumes requests until ctx ends, then stops taking new ones, lets
// the requests in hand finish for up to ShutdownGrace and hands back the
// rest (they are redelivered to another worker, which resumes them).
func (w *Worker) Run(ctx context.Context) error {
	// Requests get their own context: ending ctx stops intake, ending work
	// hands back what is still running after the grace period.
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()

	ping, err := w.cfg.Conn.Subscribe(w.names.Prefix+".workers.ping", w.pong)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer ping.Unsubscribe()

	// One supervisor per partition keeps a consumption running: a consumer
	// lost to a server restart or a failover (its pulls end, or the server
	// answers "consumer not found" while JetStream recovers) is created
	// and consumed again, so no partition stalls.
	var partitions sync.WaitGroup
	for p := 0; p < w.cfg.Log.Partitions(); p++ {
		partitions.Add(1)
		go func() {
			defer partitions.Done()
			w.consume(ctx, work, p)
		}()
	}
	w.log.Info("worker started", "partitions", w.cfg.Log.Partitions())
	<-ctx.Done()
	partitions.Wait()

	done := make(chan struct{})
	go func() { w.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.ShutdownGrace):
		w.log.Warn("handing back requests still in hand")
		stopWork()
		<-done
	}
	w.log.Info("worker stopped", "handled", w.handled.Load())
	return nil
}

// consume runs partition p's consumption until ctx ends, starting it again
// whenever it stops on its own. Requests run under work.
func (w *Worker) consume(ctx, work context.Context, p int) {
	js := w.cfg.Log.JetStream()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		cc, err := w.startConsumer(ctx, js, work, p)
		if err != nil {
			w.log.Warn("partition not consumed yet; retrying", "partition", p, "err", err, "in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		select {
		case <-ctx.Done():
			cc.Stop()
			<-cc.Closed()
			return
		case <-cc.Closed():
			w.log.Info("partition consumption ended; starting it again", "partition", p)
		}
	}
}

func (w *Worker) startConsumer(ctx context.Context, js jetstream.JetStream, work context.Context, p int) (jetstream.ConsumeContext, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:       ConsumerName(w.names, p),
		Description:   "turnlog workers: chat requests of one partition, one at a time",
		FilterSubject: w.names.ChatPartition(p),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       w.cfg.AckWait,
		MaxDeliver:    w.cfg.MaxDeliver,
		MaxAckPending: 1,
		// The consumer's state stays on disk (the default). In memory it
		// would save a state-file write per ack, but a restarted server
		// forgets memory consumers altogether.
		//
		// Prioritized pulls give each partition a preferred worker (see
		// priority), so a conversation's requests keep landing where its
		// Turn is cached, while any other worker takes over at once when
		// the preferred one stops pulling.
		PriorityPolicy: jetstream.PriorityPolicyPrioritized,
		PriorityGroups: []string{priorityGroup},
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, w.names.RequestsStream, cfg)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 400 && apiErr.ErrorCode != jetstream.JSErrCodeConsumerCreate {
		// A server older than 2.12 knows no prioritized pulls: work
		// without a preferred worker rather than not at all.
		plain := cfg
		plain.PriorityPolicy, plain.PriorityGroups = jetstream.PriorityPolicyNone, nil
		if c, perr := js.CreateOrUpdateConsumer(ctx, w.names.RequestsStream, plain); perr == nil {
			w.log.Warn("consumer without prioritized pulls (nats-server 2.12 or newer has them); conversations may move between workers", "partition", p, "err", err)
			cons, err = c, nil
		}
	}
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeConsumerCreate {
		// An existing consumer whose settings cannot be changed in place
		// (made by an older turnlog): use it as it is rather than refuse
		// to start.
		if existing, cerr := js.Consumer(ctx, w.names.RequestsStream, ConsumerName(w.names, p)); cerr == nil {
			w.log.Warn("using the existing consumer as it is", "partition", p, "err", err)
			cons, err = existing, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer for partition %d: %w", p, err)
	}
	opts := []jetstream.PullConsumeOpt{
		// MaxAckPending 1 means one request at a time whatever the batch;
		// a batch of 4 keeps a pull of this worker waiting at the server
		// while it handles a request, so the next request of the partition
		// can go to the preferred worker as soon as this one is acked.
		jetstream.PullMaxMessages(4),
		// A pull waiting at a consumer leader that dies is lost; the client
		// notices by missed heartbeats (half the expiry) and pulls again.
		// The 30s default would stall the partition for 30s after every
		// failover on a cluster.
		jetstream.PullExpiry(5 * time.Second),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if ctx.Err() == nil && !errors.Is(err, jetstream.ErrNoHeartbeat) {
				w.log.Debug("consume", "partition", p, "err", err)
			}
		}),
	}
	if info := cons.CachedInfo(); info != nil && info.Config.PriorityPolicy == jetstream.PriorityPolicyPrioritized {
		opts = append(opts, jetstream.PullPriorityGroup(priorityGroup), jetstream.PullPrioritized(w.priority(p)))
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { w.handle(work, m) }, opts...)
	if err != nil {
		return nil, fmt.Errorf("consume partition %d: %w", p, err)
	}
	return cc, nil
}

// priorityGroup is the priority group of the partition consumers.
const priorityGroup = "workers"

// priority is this worker's pull priority on partition p (0 is served
// first, 9 last). Each worker ranks partitions by a hash of its name, so
// every partition has a preferred worker without any coordination
// (rendezvous hashing over JetStream's ten levels): its requests go to the
// worker that has the conversations' Turns cached, and when that worker
// stops pulling, the next one in rank takes the partition.
func (w *Worker) priority(p int) uint8 {
	h := fnv.New32a()
	h.Write([]byte(w.cfg.Name))
	h.Write([]byte{byte(p), byte(p >> 8)})
	return uint8(h.Sum32() % 10)
}

// outcome is what happens to a request message after handling.
type outcome int

const (
	ack outcome = iota
	retryLater
	handBack
	drop // a simulated crash: neither ack nor nak
)

// errCrash is returned when a fault point fired.
var errCrash = errors.New("simulated crash")

func (w *Worker) fault(point string) error {
	if w.cfg.Fault == nil {
		return nil
	}
	if err := w.cfg.Fault(point); err != nil {
		return fmt.Errorf("%w at %s: %v", errCrash, point, err)
	}
	return nil
}

func (w *Worker) handle(ctx context.Context, m jetstream.Msg) {
	w.inflight.Add(1)
	defer w.inflight.Done()
	w.metrics.inFlight.Inc()
	defer w.metrics.inFlight.Dec()

	meta, err := m.Metadata()
	if err != nil {
		w.log.Error("request without metadata", "err", err)
		_ = m.Term()
		return
	}
	if meta.NumDelivered > 1 {
		w.metrics.redeliveries.Inc()
	}
	conv := w.names.ConversationOf(m.Subject())
	if err := events.ValidateConversationID(conv); err != nil {
		// No valid conversation to record a failure in: reject it.
		w.log.Warn("rejected request", "subject", m.Subject(), "err", err)
		w.metrics.requests.WithLabelValues("rejected").Inc()
		_ = m.Term()
		return
	}
	req, problem := parseRequest(m.Data(), conv, meta.Sequence.Stream, meta.Timestamp, w.cfg.MaxTextBytes)
	lastTry := meta.NumDelivered >= uint64(w.cfg.MaxDeliver)

	// Keep the request ours while it runs.
	alive, stopAlive := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(w.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-alive.Done():
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	out, err := w.serve(ctx, req, problem, lastTry, meta.NumDelivered == 1)
	stopAlive()

	log := w.log.With("conversation", conv, "request", req.RequestID, "delivery", meta.NumDelivered)
	switch out {
	case ack:
		w.handled.Add(1)
		if err := m.DoubleAck(context.WithoutCancel(ctx)); err != nil {
			// The request is complete in the log; a redelivery will see
			// that and just acknowledge.
			log.Warn("ack failed", "err", err)
		}
	case retryLater:
		w.metrics.requests.WithLabelValues("retried").Inc()
		log.Warn("request will be retried", "err", err)
		_ = m.NakWithDelay(time.Duration(meta.NumDelivered) * time.Second)
	case handBack:
		w.metrics.requests.WithLabelValues("handed_back").Inc()
		log.Info("request handed back", "err", err)
		_ = m.Nak()
	case drop:
		log.Warn("request dropped", "err", err)
	}
}

// serve runs a request to its end, retrying on conflicts: another writer
// moved the conversation, so reload and resume from the log. A first
// delivery starts optimistically from the cached Turn (see start).
func (w *Worker) serve(ctx context.Context, req Request, problem string, lastTry, firstDelivery bool) (outcome, error) {
	for attempt := 0; ; attempt++ {
		out, err := w.serveOnce(ctx, req, problem, lastTry, firstDelivery && attempt == 0)
		if errors.Is(err, eventlog.ErrConflict) && attempt < 10 {
			// The cached Turn is still a state the log went through: the
			// next attempt brings it up to date from the log (see load).
			w.metrics.conflicts.Inc()
			continue
		}
		return out, err
	}
}

// start returns the Turn a request starts from and the step of its next
// event.
//
// On a first delivery with the conversation cached, and the cache not
// ending with this very request, nobody can have started the request, so
// the cached Turn is used as it is: if the log moved on meanwhile, the
// first append's expected-sequence check refuses it with ErrConflict and
// serve starts again from the log. Otherwise (a redelivery, nothing
// cached) the log's last message says whether the request is done, half
// done (resume after its last step) or new.
func (w *Worker) start(ctx context.Context, req Request, optimistic bool) (turn *projector.Turn, step int, done bool, err error) {
	conv := req.Conversation
	if optimistic {
		if t, cause := w.cache.take(conv); t != nil {
			if cause != req.RequestID {
				w.metrics.loads.WithLabelValues("cache").Inc()
				return t, 0, false, nil
			}
			w.cache.put(t, cause) // this very request wrote it: see below
		}
	}
	tail, err := w.cfg.Log.Last(ctx, conv)
	if err != nil {
		return nil, 0, false, err
	}
	resume := tail.Seq > 0 && tail.Cause == req.RequestID
	if resume && tail.Closed() {
		return nil, 0, true, nil // finished before; only the ack was lost
	}
	if resume {
		step = tail.Step + 1
	}
	turn, err = w.load(ctx, conv, tail.Seq)
	return turn, step, false, err
}

func (w *Worker) serveOnce(ctx context.Context, req Request, problem string, lastTry, optimistic bool) (outcome, error) {
	conv := req.Conversation
	turn, step, done, err := w.start(ctx, req, optimistic)
	if done {
		return ack, nil
	}
	resume := step > 0
	if err != nil {
		if errors.Is(err, events.ErrInvalid) || errors.Is(err, projector.ErrMismatch) {
			// The log itself cannot be folded: no retry will help.
			w.metrics.requests.WithLabelValues("failed").Inc()
			return ack, fmt.Errorf("load %s: %w", conv, err)
		}
		return retryLater, err
	}
	name := req.Profile
	if name == "" {
		name = profile.DefaultName
	}
	p, ok := w.profiles[name]
	if problem == "" && !ok {
		problem = fmt.Sprintf("unknown profile %q; this worker has %s", truncate(name, 40), strings.Join(w.cfg.Profiles.Names(), ", "))
	}
	if p == nil {
		p = w.profiles[profile.DefaultName]
	}
	model := req.Model
	if model == "" {
		model = p.Model
	}
	turnEventsAtStart := turn.Events
	tx := engine.NewTx(turn, req.RequestID,
		engine.WithLog(appender{w}),
		engine.WithStep(step),
		engine.WithModel(model),
		engine.WithTools(p.Tools.Specs()...),
		engine.WithDelta(w.deltas(conv, req.RequestID)),
		engine.WithAnswerOpen())
	if problem != "" {
		return w.fail(ctx, tx, problem)
	}
	if !resume {
		if err := w.fault("user"); err != nil {
			return drop, err
		}
		if err := tx.Emit(ActorWorker, events.UserAppended{BlockID: engine.NewID(), Text: req.Text}); err != nil {
			return w.fail(ctx, tx, err.Error())
		}
		if len(req.Data) > 0 {
			if err := tx.Emit(ActorWorker, events.DataSet{Values: req.Data}); err != nil {
				return w.fail(ctx, tx, err.Error())
			}
		}
		// Not committed on its own: the request's input lands in one step
		// with the middlewares' changes and inference.started, and its
		// answer in one step with request.completed. A crash before the
		// first append leaves nothing; the redelivery starts afresh.
	}
	if err := p.Loop.Run(ctx, tx); err != nil {
		return w.afterError(ctx, tx, err, lastTry)
	}
	inferences := 0
	for _, e := range tx.Committed() {
		if e.Type == events.TypeInferenceStarted {
			inferences++
		}
	}
	if err := tx.Emit(ActorWorker, events.RequestCompleted{Inferences: inferences}); err != nil {
		return retryLater, err
	}
	if err := tx.Commit(ctx); err != nil {
		return w.afterError(ctx, tx, err, lastTry)
	}
	w.snapshot(ctx, tx, turnEventsAtStart)
	w.cache.put(tx.Turn(), req.RequestID)
	if err := w.fault("completed"); err != nil {
		return drop, err
	}
	w.metrics.requests.WithLabelValues("completed").Inc()
	return ack, nil
}

// snapshot saves the conversation's snapshot when the request took it past
// a multiple of the log's snapshot interval. A worker serves a conversation
// from its cache and rarely loads it, so Load, which writes snapshots after
// long folds, would seldom do so, and a restarted worker would fold the
// whole history. A failed save only costs that: it is logged, not returned.
func (w *Worker) snapshot(ctx context.Context, tx *engine.Tx, eventsAtStart int) {
	every := w.cfg.Log.SnapshotEvery()
	turn := tx.Turn()
	if every <= 0 || turn.Events/every == eventsAtStart/every || tx.Step() == 0 {
		return
	}
	last := eventlog.StepID(tx.Cause(), tx.Step()-1) // the message at turn.Seq
	if err := w.cfg.Log.SaveSnapshot(ctx, turn, last); err != nil {
		w.log.Warn("snapshot not saved", "conversation", turn.Conversation, "err", err)
	}
}

// afterError decides what an error in the middle of a request means.
func (w *Worker) afterError(ctx context.Context, tx *engine.Tx, err error, lastTry bool) (outcome, error) {
	switch {
	case errors.Is(err, errCrash):
		return drop, err
	case ctx.Err() != nil:
		return handBack, err
	case errors.Is(err, eventlog.ErrConflict):
		return retryLater, err
	case (errors.Is(err, errLogUnavailable) || engine.IsTransient(err)) && !lastTry:
		return retryLater, err
	}
	return w.fail(ctx, tx, err.Error())
}

// fail ends the request with request.failed and a reason a person can act
// on. The request is acknowledged: it will not be retried.
func (w *Worker) fail(ctx context.Context, tx *engine.Tx, reason string) (outcome, error) {
	// Whatever was pending belongs to the failed attempt and is dropped:
	// the failure is recorded on the Turn as the log has it.
	conv := tx.Turn().Conversation
	w.cache.drop(conv)
	turn, err := w.cfg.Log.Load(ctx, conv)
	if err != nil {
		if ctx.Err() != nil {
			return handBack, err
		}
		return retryLater, err
	}
	// The failure takes the step after the request's last stored one: a
	// step whose append timed out may have been stored all the same, and
	// request.failed under its ID would be dropped as a duplicate.
	step := tx.Step()
	if tail, err := w.cfg.Log.Last(ctx, conv); err == nil && tail.Cause == tx.Cause() && tail.Step >= step {
		step = tail.Step + 1
	}
	// A request that failed before its first step landed still records
	// what the user asked, so the failure has its context in the log.
	var inputs []events.Event
	if step == 0 {
		inputs = requestInputs(tx)
	}
	fresh, err := w.recordFailure(ctx, turn.Clone(), tx.Cause(), step, inputs, reason)
	if len(inputs) > 0 && err != nil && (refused(err) || errors.Is(err, events.ErrInvalid)) && !errors.Is(err, eventlog.ErrConflict) {
		// The inputs themselves cannot be stored (too large, say): the
		// failure alone can.
		fresh, err = w.recordFailure(ctx, turn, tx.Cause(), step, nil, reason)
	}
	if err != nil {
		if ctx.Err() != nil {
			return handBack, err
		}
		return retryLater, err
	}
	w.metrics.requests.WithLabelValues("failed").Inc()
	w.cache.put(fresh.Turn(), tx.Cause())
	w.log.Info("request failed", "conversation", conv, "request", tx.Cause(), "reason", reason)
	return ack, nil
}

// recordFailure appends inputs (if any) and request.failed as one step on
// turn.
func (w *Worker) recordFailure(ctx context.Context, turn *projector.Turn, cause string, step int, inputs []events.Event, reason string) (*engine.Tx, error) {
	fresh := engine.NewTx(turn, cause, engine.WithLog(appender{w}), engine.WithStep(step))
	for _, e := range inputs {
		if err := fresh.Emit(e.Actor, e.Payload); err != nil {
			return nil, err
		}
	}
	if err := fresh.Emit(ActorWorker, events.RequestFailed{Reason: reason}); err != nil {
		return nil, err
	}
	return fresh, fresh.Commit(ctx)
}

// requestInputs are the events the worker recorded from the request itself
// (its user block, its data), committed or not.
func requestInputs(tx *engine.Tx) []events.Event {
	var in []events.Event
	for _, e := range append(slices.Clone(tx.Committed()), tx.Pending()...) {
		if e.Actor == ActorWorker && (e.Type == events.TypeUserAppended || e.Type == events.TypeDataSet) {
			in = append(in, e)
		}
	}
	return in
}

// load returns the conversation's Turn at lastSeq: the cached one when it
// is still the log's last, the cached one brought up to date with the
// messages written after it (by another worker) when it is behind, or a
// load from the log.
func (w *Worker) load(ctx context.Context, conv string, lastSeq uint64) (*projector.Turn, error) {
	if t, _ := w.cache.take(conv); t != nil && lastSeq > 0 {
		switch {
		case t.Seq == lastSeq:
			w.metrics.loads.WithLabelValues("cache").Inc()
			return t, nil
		case t.Seq < lastSeq:
			caught, err := w.cfg.Log.CatchUp(ctx, t)
			if err == nil {
				w.metrics.loads.WithLabelValues("cache_and_tail").Inc()
				return caught, nil
			}
		}
		// Ahead of what the log says (a lagging replica answered) or not
		// caught up: load afresh.
	}
	w.metrics.loads.WithLabelValues("log").Inc()
	return w.cfg.Log.Load(ctx, conv)
}

// appender measures steps and runs the "step" fault point before each.
type appender struct{ w *Worker }

func (a appender) Append(ctx context.Context, conv string, expected uint64, evs ...events.Event) (uint64, error) {
	if err := a.w.fault("step"); err != nil {
		return 0, err
	}
	start := time.Now()
	seq, err := a.w.cfg.Log.Append(ctx, conv, expected, evs...)
	a.w.metrics.stepSeconds.Observe(time.Since(start).Seconds())
	if err != nil && ctx.Err() == nil && !refused(err) {
		err = fmt.Errorf("%w: %w", errLogUnavailable, err)
	}
	return seq, err
}

// errLogUnavailable marks an append that failed for want of a log, not
// because the log refused it: a timeout or no responder while a cluster
// elects a leader, a lost connection. The step may even have been stored.
// The request is retried later and resumes from what the log holds; ending
// it as request.failed would fail a request that can still succeed.
var errLogUnavailable = errors.New("event log unavailable")

// refused reports whether the log answered an append with a definite no.
func refused(err error) bool {
	return errors.Is(err, eventlog.ErrConflict) || errors.Is(err, eventlog.ErrCauseReused) ||
		errors.Is(err, eventlog.ErrStepExists) || errors.Is(err, eventlog.ErrTooLarge) ||
		errors.Is(err, events.ErrInvalid)
}

// Delta is what live clients receive on turnlog.delta.<conversation>.
type Delta struct {
	RequestID string      `json:"request_id"`
	Kind      events.Kind `json:"kind"`
	Text      string      `json:"text"`
}

func (w *Worker) deltas(conv, requestID string) func(engine.Delta) {
	subject := w.names.DeltaSubject(conv)
	return func(d engine.Delta) {
		data, _ := json.Marshal(Delta{RequestID: requestID, Kind: d.Kind, Text: d.Text})
		_ = w.cfg.Conn.Publish(subject, data)
	}
}

// Status is what a worker answers on <prefix>.workers.ping.
type Status struct {
	Name     string    `json:"name"`
	Started  time.Time `json:"started"`
	Handled  int64     `json:"handled"`
	Profiles []string  `json:"profiles"`
}

func (w *Worker) pong(m *nats.Msg) {
	data, _ := json.Marshal(Status{Name: w.cfg.Name, Started: w.started, Handled: w.handled.Load(), Profiles: w.cfg.Profiles.Names()})
	_ = m.Respond(data)
}
