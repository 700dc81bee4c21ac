package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Log is a conversation store on JetStream. It is safe for concurrent use.
type Log struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	names Names
	opts  options
	// shards are the event streams, shards[ShardOf(conversation)] holding
	// a conversation's events; known once ready (see shardCount for an
	// attached log's subjects before that).
	shards []jetstream.Stream
	snaps  jetstream.KeyValue
	// deadLetters keeps the requests that could not end in a conversation.
	deadLetters jetstream.Stream
	// bigSnaps holds the snapshots too large for a value of snaps.
	bigSnaps jetstream.ObjectStore
	// requestIDs maps client-chosen request IDs to their conversation.
	requestIDs jetstream.KeyValue
	// history caches conversations' messages (see history.go); nil when
	// the bucket is not there for this log to use.
	history jetstream.KeyValue

	partitions int
	// eventShards is how many event streams the installation has, 0 until
	// known (an attached log learns it on first use).
	eventShards atomic.Int32

	// ready is set once events, snaps and bigSnaps are known: by Open, or
	// on first use of an attached log (see Attach); lookup guards that.
	ready  atomic.Bool
	lookup sync.Mutex
}

type options struct {
	prefix        string
	replicas      int // 0: as the existing streams have it, 1 when creating
	partitions    int // 0: as the existing requests stream has it, DefaultPartitions when creating
	eventShards   int // 0: as the installation recorded it, 1 when creating
	snapshotEvery int
	logger        *slog.Logger
	duplicates    time.Duration
	requestLimits RequestLimits
	deadLetters   DeadLetterLimits
	compression   *jetstream.StoreCompression // nil: as the existing stream has it, none when creating
	readOnly      bool
}

// Option configures Open.
type Option func(*options) error

// WithPrefix sets the subject prefix and the stem of stream and bucket
// names (default "turnlog").
func WithPrefix(prefix string) Option {
	return func(o *options) error {
		if err := validPrefix(prefix); err != nil {
			return err
		}
		o.prefix = prefix
		return nil
	}
}

// WithReplicas sets how many servers hold each stream and bucket: 1 on a
// single server, 3 on a cluster so that losing a machine loses nothing.
// Without it, existing streams keep their setting and new ones get 1, so a
// client that opens the log never reconfigures a cluster by accident.
func WithReplicas(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 5 {
			return fmt.Errorf("replicas %d: use 1 to 5", n)
		}
		o.replicas = n
		return nil
	}
}

// DefaultPartitions is how many partitions chat requests are spread over
// when the requests stream is created.
const DefaultPartitions = 16

// WithPartitions sets how many partitions chat requests are hashed into by
// conversation. Requests of one partition are processed one at a time, in
// order, so it bounds parallelism across conversations. Without it, an
// existing stream keeps its count. Change it only with no requests pending.
func WithPartitions(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 1024 {
			return fmt.Errorf("partitions %d: use 1 to 1024", n)
		}
		o.partitions = n
		return nil
	}
}

// MaxEventShards bounds WithEventShards: a shard is a stream with its own
// leader, so more shards than servers (times a few) only add overhead.
const MaxEventShards = 64

// WithEventShards sets over how many event streams conversations are
// spread (default 1), each with its own leader, so that on a cluster writes
// use every server. It takes effect when the installation is created and
// is recorded in the streams' metadata; opening an installation with
// another count fails (ErrShardsDiffer), because each conversation's stream
// follows from the count (ShardOf) and must never move silently. Without
// it, Open uses the recorded count.
func WithEventShards(n int) Option {
	return func(o *options) error {
		if n < 1 || n > MaxEventShards {
			return fmt.Errorf("event shards %d: use 1 to %d", n, MaxEventShards)
		}
		o.eventShards = n
		return nil
	}
}

// WithSnapshotEvery sets after how many events past the last snapshot a
// load writes a new one (default 100). Smaller means faster loads and more
// snapshot writes.
func WithSnapshotEvery(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("snapshot interval %d: use 1 or more events", n)
		}
		o.snapshotEvery = n
		return nil
	}
}

// WithCompression sets how the events stream stores its messages on disk:
// jetstream.S2Compression compresses each message block with S2 once it is
// full (the block being written stays as it is), for a fraction of the
// bytes at some CPU on writes and on reads of old blocks;
// jetstream.NoCompression stores them as they are. Without it, an
// existing stream keeps its setting and a new one is not compressed.
// Changing it affects the blocks written from then on.
func WithCompression(c jetstream.StoreCompression) Option {
	return func(o *options) error {
		if c != jetstream.NoCompression && c != jetstream.S2Compression {
			return fmt.Errorf("compression %v: use none or s2", c)
		}
		o.compression = &c
		return nil
	}
}

// WithLogger sets where the log reports what it recovered from, such as a
// corrupt snapshot it ignored (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error { o.logger = l; return nil }
}

// WithDuplicateWindow sets how long JetStream remembers message IDs to drop
// a retried step (default 2 minutes). A retry after the window is still
// caught by the expected-sequence check.
func WithDuplicateWindow(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Second {
			return fmt.Errorf("duplicate window %s: use at least 1s", d)
		}
		o.duplicates = d
		return nil
	}
}

// ReadOnly opens the log for reading only: Open looks its streams and
// buckets up but never creates or changes one (it fails when they are
// missing), and Load writes and deletes no snapshot. Commands that only
// read (replay, export, chat's wait for the answer) use it, so that they
// work with NATS credentials that may not write (the client role), and so
// that reading never changes a thing.
func ReadOnly() Option {
	return func(o *options) error { o.readOnly = true; return nil }
}

func validPrefix(p string) error {
	if p == "" {
		return errors.New("prefix is empty")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("prefix %q: use letters, digits, '-' or '_' only", p)
		}
	}
	return nil
}

// Open connects the log to JetStream through nc and creates or upgrades its
// streams and buckets. It is idempotent: every process may call it at
// start, and a second call with the same options changes nothing.
func Open(ctx context.Context, nc *nats.Conn, opts ...Option) (*Log, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("open event log: %w", err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	l := &Log{nc: nc, js: js, names: NamesFor(o.prefix), opts: o}
	if err := l.provision(ctx); err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	l.ready.Store(true)
	return l, nil
}

func defaultOptions() options {
	return options{prefix: DefaultPrefix, snapshotEvery: 100, logger: slog.Default(), duplicates: 2 * time.Minute,
		requestLimits: DefaultRequestLimits, deadLetters: DefaultDeadLetterLimits}
}

func (l *Log) provision(ctx context.Context) error {
	if err := l.provisionEvents(ctx); err != nil {
		return err
	}
	reqs, err := l.ensureStream(ctx, l.requestsConfig())
	if err != nil {
		return err
	}
	if l.deadLetters, err = l.ensureStream(ctx, l.deadLettersConfig()); err != nil {
		return err
	}
	l.partitions = partitionsOf(reqs.CachedInfo().Config.SubjectTransform)
	if l.snaps, err = l.ensureBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      l.names.SnapshotsBucket,
		Description: "turnlog projection snapshots (a cache, rebuildable from the events)",
		History:     1,
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return err
	}
	if l.requestIDs, err = l.ensureBucket(ctx, l.requestIDsConfig()); err != nil {
		return err
	}
	if l.bigSnaps, err = l.ensureObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      l.names.SnapshotObjectsBucket,
		Description: "turnlog projection snapshots too large for one message (a cache, rebuildable from the events)",
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return err
	}
	if _, err = l.ensureBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      l.names.TemplatesBucket,
		Description: "turnlog system prompt templates",
		History:     16,
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return err
	}
	// The history cache is optional: a read-only log on an installation
	// that has none reads the events themselves.
	l.history, err = l.ensureBucket(ctx, historyBucketConfig(l.names))
	if errors.Is(err, errNotProvisioned) {
		l.history, err = nil, nil
	}
	return err
}

// ensureStream creates a stream, or updates it only where this Open asked
// for something else: replicas and partitions stay as they are unless an
// option set them.
func (l *Log) ensureStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return l.ensureFound(ctx, cfg, nil)
}

// ensureFound is ensureStream for a stream already looked up (found, or
// nil to look it up now).
func (l *Log) ensureFound(ctx context.Context, cfg jetstream.StreamConfig, found jetstream.Stream) (jetstream.Stream, error) {
	s, err := found, error(nil)
	if s == nil {
		s, err = l.js.Stream(ctx, cfg.Name)
	}
	var existing *jetstream.StreamConfig
	switch {
	case err == nil:
		existing = &s.CachedInfo().Config
		if l.opts.readOnly {
			return s, nil
		}
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	case l.opts.readOnly:
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, errNotProvisioned)
	}
	cfg.Replicas = l.opts.replicas
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
		if existing != nil {
			cfg.Replicas = existing.Replicas
		}
	}
	if strings.HasPrefix(cfg.Name, l.names.EventsStream) { // every shard of the events
		switch {
		case l.opts.compression != nil:
			cfg.Compression = *l.opts.compression
		case existing != nil:
			cfg.Compression = existing.Compression
		}
	}
	if cfg.Name == l.names.RequestsStream {
		n := l.opts.partitions
		if n == 0 {
			n = DefaultPartitions
			if existing != nil && existing.SubjectTransform != nil {
				n = partitionsOf(existing.SubjectTransform)
			}
		}
		cfg.SubjectTransform = l.names.chatTransform(n)
	}
	if existing == nil {
		s, err = l.js.CreateStream(ctx, cfg)
	} else if needsUpdate(*existing, cfg) {
		s, err = l.js.UpdateStream(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

func needsUpdate(have, want jetstream.StreamConfig) bool {
	return have.Replicas != want.Replicas || have.Description != want.Description ||
		have.AllowDirect != want.AllowDirect || have.Duplicates != want.Duplicates ||
		have.DenyDelete != want.DenyDelete || have.Compression != want.Compression ||
		have.MaxAge != want.MaxAge || unlimited(have.MaxBytes) != unlimited(want.MaxBytes) ||
		unlimited(have.MaxMsgs) != unlimited(want.MaxMsgs) ||
		unlimited(have.MaxMsgsPerSubject) != unlimited(want.MaxMsgsPerSubject) || have.Discard != want.Discard ||
		have.DiscardNewPerSubject != want.DiscardNewPerSubject ||
		(want.SubjectTransform != nil && (have.SubjectTransform == nil || *have.SubjectTransform != *want.SubjectTransform))
}

// unlimited normalises a stream limit: the server reports "no limit" as -1,
// a config written in Go leaves it 0.
func unlimited(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

func (l *Log) ensureBucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := l.js.KeyValue(ctx, cfg.Bucket)
	if err == nil {
		if l.opts.replicas == 0 || l.opts.readOnly {
			return kv, nil
		}
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
		}
		if st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas == l.opts.replicas {
			return kv, nil
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	} else if l.opts.readOnly {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, errNotProvisioned)
	}
	cfg.Replicas = max(l.opts.replicas, 1)
	// Create when missing, update only to change the replicas: a worker's
	// credential may create a bucket on a fresh cluster, never change one.
	if err != nil {
		kv, err = l.js.CreateKeyValue(ctx, cfg)
	} else {
		kv, err = l.js.UpdateKeyValue(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// ensureObjectStore is ensureBucket for an object store: created when
// missing, its replicas changed only when an option asked for it.
func (l *Log) ensureObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	obs, err := l.js.ObjectStore(ctx, cfg.Bucket)
	if err == nil {
		if l.opts.replicas == 0 || l.opts.readOnly {
			return obs, nil
		}
		st, err := obs.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, err)
		}
		if st.Replicas() == l.opts.replicas {
			return obs, nil
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, err)
	} else if l.opts.readOnly {
		return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, errNotProvisioned)
	}
	cfg.Replicas = max(l.opts.replicas, 1)
	if err != nil {
		obs, err = l.js.CreateObjectStore(ctx, cfg)
	} else {
		obs, err = l.js.UpdateObjectStore(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, err)
	}
	return obs, nil
}

// errNotProvisioned: a read-only Open found a stream or bucket missing.
var errNotProvisioned = errors.New("it does not exist yet; start `turnlog serve`, or run `turnlog worker` or an admin command against this server, which create it")

// Partitions is how many partitions chat requests are spread over.
func (l *Log) Partitions() int { return l.partitions }

// SnapshotEvery is how many events a conversation may grow by before a
// fresh snapshot is due (WithSnapshotEvery): Load writes one after folding
// that many, and a writer that keeps Turns in memory, and so rarely loads,
// should save one itself (SaveSnapshot) as often.
func (l *Log) SnapshotEvery() int { return l.opts.snapshotEvery }

// Names returns the subjects, streams and buckets this log uses.
// The event shard count is included once known (always on a log from
// Open; on an attached log after its first read or write).
func (l *Log) Names() Names { return l.names.WithEventShards(int(l.eventShards.Load())) }

// JetStream returns the JetStream context the log uses, for components
// (workers, templates) that share its connection.
func (l *Log) JetStream() jetstream.JetStream { return l.js }
