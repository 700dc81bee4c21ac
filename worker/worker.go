package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/templates"
)

// ActorWorker is the actor of the events the worker itself records.
const ActorWorker = "worker"

// Config configures a worker. Log, Conn and Profiles are required.
type Config struct {
	Log      *eventlog.Log
	Conn     *nats.Conn
	Profiles profile.Set
	// Tools offered to the model (nil: the scripted engine's demo tool
	// for scripted profiles, none for the others).
	Tools *engine.Tools
	// Name identifies the worker in logs and `turnlog status`.
	Name string
	// AckWait is how long a request may go without a sign of life before
	// JetStream gives it to another worker (default DefaultAckWait). The
	// worker reports progress (an in-progress ack, which restarts the
	// server's timer for the message) every AckWait/3 while it works, so
	// a long model call keeps its request; a worker that died, or a
	// delivery or negative ack lost on the way, holds the partition for at
	// most AckWait.
	AckWait time.Duration
	// MaxDeliver bounds the attempts at one request (default 5): from the
	// MaxDeliver-th delivery on, a transient failure ends the request as
	// request.failed, so it is never retried forever. Deliveries lost on
	// the way (a worker cut off from the cluster) count as deliveries, so
	// the consumer allows LostDeliveries more before JetStream gives up on
	// a message that no worker ever received.
	MaxDeliver int
	// MaxTextBytes bounds a request's text (default 64 KiB).
	MaxTextBytes int
	// ShutdownGrace is how long Run waits for requests in hand after its
	// context ends before handing them back (default 30s).
	ShutdownGrace time.Duration
	// CacheBytes bounds the memory of the worker's cache of Turns, as
	// projector.Size estimates it (default DefaultCacheBytes). The least
	// recently used Turns go first, with their snapshots saved.
	CacheBytes int64
	// IdleSnapshot is how long a cached Turn may go unused before the
	// worker saves its snapshot, if it is ahead of the last one (default
	// DefaultIdleSnapshot; negative: never, only on eviction and stop).
	IdleSnapshot time.Duration
	// CwdRoots are the directories under which a request's "cwd" data
	// must lie for the template variables to read it, for profiles that
	// set no cwd_roots of their own (see profile.Profile.CwdRoots). Empty
	// means any directory: `turnlog worker` and `serve` pass their
	// --cwd-root, by default the directory they run in.
	CwdRoots []string
	// DenyDirs are directories the template variables never read, whatever
	// a request's cwd (template.Env.DenyDirs): `turnlog serve` passes
	// <data>/auth, where its keys and its HTTP token live.
	DenyDirs []string
	Logger   *slog.Logger
	// Storage, if set, reports the JetStream storage of the server this
	// worker runs beside, for its status (see Storage); nil when unknown.
	Storage func() *Storage
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
		c.AckWait = DefaultAckWait
	}
	if c.AckWait < MinAckWait {
		return fmt.Errorf("worker: ack wait %s: use at least %s (the worker reports progress every third of it)", c.AckWait, MinAckWait)
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
	if c.CacheBytes == 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	if c.CacheBytes < 0 {
		return fmt.Errorf("worker: cache bytes %d: use 1 or more (0 for the default, %d)", c.CacheBytes, DefaultCacheBytes)
	}
	if c.IdleSnapshot == 0 {
		c.IdleSnapshot = DefaultIdleSnapshot
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// DefaultAckWait is the default Config.AckWait: a dead worker's
// partitions, and a delivery lost on the way, wait at most this long
// (issue 14 §6 asks for a takeover within 5 s). Shorter means more
// progress acks (one per request every AckWait/3) and a worker stalled for
// longer than this (a pause of the whole process) sees its request handed
// to another worker, which is safe (appends are fenced) but redoes work.
const DefaultAckWait = 3 * time.Second

// MinAckWait is the shortest Config.AckWait: the worker reports progress
// every third of it, and a shorter one would spend a request's time on
// progress acks.
const MinAckWait = 300 * time.Millisecond

// LostDeliveries is how many deliveries beyond Config.MaxDeliver the
// partition consumers allow, for deliveries that never reached a worker:
// at the default ack wait, a worker cut off for a minute.
const LostDeliveries = 20

// Worker serves chat requests. Create it with New and start it with Run.
type Worker struct {
	cfg      Config
	names    eventlog.Names
	profiles map[string]*profile.Built
	metrics  *Metrics
	cache    *turnCache
	saves    chan saveJob  // Turns to snapshot beside the requests
	checks   chan checkJob // requests' events to check (findings.go)
	checkers *check.Cache
	log      *slog.Logger
	link     *clusterLink
	progress *progress
	// intake is Run's context: it ends when the worker is told to stop,
	// before the requests in hand get their grace period (see
	// holdWhileFull). Set by Run before any request is taken.
	intake context.Context

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
		saves:    make(chan saveJob, 256),
		checks:   make(chan checkJob, 256),
		checkers: check.NewCache(int(cfg.CacheBytes / checkersShare)),
		log:      cfg.Logger.With("worker", cfg.Name),
		started:  time.Now(),
		progress: newProgress(),
	}
	w.cache = newTurnCache(cfg.CacheBytes, w.metrics)
	w.cache.release = w.release
	w.link = newClusterLink(w.log, probeCluster(cfg.Log.JetStream(), w.names.RequestsStream))
	w.metrics.countStoredDeadLetters(cfg.Log.DeadLetterCount)
	store := templates.New(cfg.Log)
	for name, p := range cfg.Profiles {
		if p.Templates == nil {
			p.Templates = store // the "template" middleware's global template
		}
		if p.CwdRoots == nil {
			p.CwdRoots = cfg.CwdRoots
		}
		p.DenyDirs = append(p.DenyDirs, cfg.DenyDirs...)
		b, err := p.Build(w.log, cfg.Tools)
		if err != nil {
			return nil, fmt.Errorf("worker: profile %q: %w", name, err)
		}
		w.profiles[name] = b
	}
	return w, nil
}

// forget lets go of what the worker keeps of conversation conv, erased.
func (w *Worker) forget(conv string) {
	w.cache.drop(conv)
	w.checkers.Take(conv)
}

// Metrics returns the worker's Prometheus series.
func (w *Worker) Metrics() *Metrics { return w.metrics }

// Handled is how many requests the worker has finished and acknowledged
// (`turnlog status` shows it): a count that costs nothing to read, for
// whoever waits on the worker in the same process.
func (w *Worker) Handled() int64 { return w.handled.Load() }

// Run consumes requests until ctx ends, then stops taking new ones, lets
// the requests in hand finish for up to ShutdownGrace and hands back the
// rest (they are redelivered to another worker, which resumes them).
func (w *Worker) Run(ctx context.Context) error {
	// Requests get their own context: ending ctx stops intake, ending work
	// hands back what is still running after the grace period.
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	w.intake = ctx

	// A lost connection is the plainest sign of a lost cluster.
	nc := w.cfg.Conn
	prev := nc.DisconnectErrHandler()
	nc.SetDisconnectErrHandler(func(c *nats.Conn, err error) {
		if prev != nil {
			prev(c, err)
		}
		if ctx.Err() == nil {
			w.link.lost("connection to NATS lost", err)
		}
	})
	defer nc.SetDisconnectErrHandler(prev)
	go w.link.run(ctx)
	// Requests in hand are reported as long as they run, past ctx's end
	// through the grace period.
	go w.progress.run(work, w.cfg.AckWait/3)

	ping, err := w.cfg.Conn.Subscribe(w.names.WorkersPing(), w.pong)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer ping.Unsubscribe()
	// An erased conversation leaves the worker's memory: its Turn and its
	// checker (a snapshot of it is never written back: save finds the log
	// does not end at the Turn).
	if stop, err := w.cfg.Log.OnErase(w.forget); err != nil {
		w.log.Warn("erasures not followed; an erased conversation stays in memory until the cache lets it go", "err", err)
	} else {
		defer stop()
	}

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
	partitions.Add(1)
	go func() {
		defer partitions.Done()
		w.sweepStrays(ctx)
	}()
	partitions.Add(1)
	go func() {
		defer partitions.Done()
		w.followExhausted(ctx)
	}()
	saving, stopSaving := context.WithCancel(context.WithoutCancel(ctx))
	saverDone := make(chan struct{})
	go func() { defer close(saverDone); w.saveLoop(saving) }()
	checking, stopChecking := context.WithCancel(context.WithoutCancel(ctx))
	checkerDone := make(chan struct{})
	go func() { defer close(checkerDone); w.checkLoop(checking) }()
	defer func() { stopChecking(); <-checkerDone }()
	defer func() {
		// Last, with the requests done: the Turns this worker holds are
		// snapshotted, so whoever serves them next starts from there.
		stopSaving()
		<-saverDone
		last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		w.saveAll(last)
	}()
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
