package eventlog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

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
	// requests is the requests stream, known once a duplicate request has
	// been checked (see checkDuplicateRequest) or by Open.
	requests jetstream.Stream
	// deadLetters keeps the requests that could not end in a conversation.
	deadLetters jetstream.Stream
	// bigSnaps holds the snapshots too large for a value of snaps.
	bigSnaps jetstream.ObjectStore
	// requestIDs maps client-chosen request IDs to their conversation.
	requestIDs jetstream.KeyValue
	// history caches conversations' messages (see history.go); nil when
	// the bucket is not there for this log to use.
	history jetstream.KeyValue
	// erasures holds the threading index's bucket (a jetstream.KeyValue)
	// once ErasedAfter found it.
	erasures atomic.Value

	partitions int
	// eventShards is how many event streams the installation has, 0 until
	// known (an attached log learns it on first use).
	eventShards atomic.Int32

	// rolePrefix and filterPrefix start an append's subject and the
	// filter of its check (see appendSubjects).
	rolePrefix, filterPrefix string

	// serverOK is set once the server is known to check appends across a
	// conversation's subjects (see checkServer).
	serverOK atomic.Bool

	// ready is set once events, snaps and bigSnaps are known: by Open, or
	// on first use of an attached log (see Attach); lookup guards that.
	ready  atomic.Bool
	lookup sync.Mutex
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
	l.setWriterPrefixes()
	if err := l.provision(ctx); err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	l.ready.Store(true)
	return l, nil
}

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

// firstUse returns *handle, looked up with lookup while it is unset: the
// streams and buckets that a log from Attach, or a read-only Open of an
// installation that did not have them yet, finds on first use. l.lookup
// guards the handles.
func firstUse[T comparable](l *Log, handle *T, lookup func() (T, error)) (T, error) {
	l.lookup.Lock()
	defer l.lookup.Unlock()
	var unset T
	if *handle == unset {
		h, err := lookup()
		if err != nil {
			return unset, err
		}
		*handle = h
	}
	return *handle, nil
}

// requestsStream is the requests stream, looked up on first use by a log
// from Attach.
func (l *Log) requestsStream(ctx context.Context) (jetstream.Stream, error) {
	return firstUse(l, &l.requests, func() (jetstream.Stream, error) { return l.stream(ctx, l.names.RequestsStream) })
}

// stream looks up the stream called name.
func (l *Log) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := l.js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	return s, nil
}
