package eventlog

// This file holds the options of Open and Attach.

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

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
	// bytesSet: an option set the requests' or dead letters' byte
	// limits; otherwise an existing stream keeps its own. bytesAtLeast:
	// that option was WithStorageBudget, whose limits never lower an
	// existing stream's (see ensureFound).
	bytesSet     bool
	bytesAtLeast bool
	compression  *jetstream.StoreCompression // nil: as the existing stream has it, none when creating
	readOnly     bool
	noCaches     bool
	writerRole   string
}

// defaultOptions are the settings of a log opened without options.
func defaultOptions() options {
	return options{prefix: DefaultPrefix, snapshotEvery: 100, logger: slog.Default(), duplicates: 2 * time.Minute,
		requestLimits: DefaultRequestLimits, deadLetters: DefaultDeadLetterLimits}
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

// FromStreamOnly makes reads of whole histories read the events stream,
// never the history cache (see history.go): the cache is written by the
// workers, so a worker's credential could make a cached history say
// anything, its writers included, as long as its last message is the
// stream's. What proves who wrote what (`replay --verify`) reads the
// stream.
func FromStreamOnly() Option {
	return func(o *options) error { o.noCaches = true; return nil }
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

// DefaultWriterRole is the role a log writes as without WithWriterRole
// when its connection was not made with a role's credential (its inbox
// prefix names none, see natsauth.InboxPrefix): the admin, who may write
// anything. On a server without authentication every connection may, so
// the attribution says nothing there; on one with the roles'
// permissions, a connection made with the worker's credential writes as
// the worker unless told otherwise.
const DefaultWriterRole = "admin"

// WithWriterRole sets the role this log's appends are written as: the
// events-<role> token of their subject (Names.EventsRoleSubject), which the server lets
// only that role's credential publish to (natsauth). turnlog's workers and
// the recording gateway write as "worker", operator commands as "admin"
// (say so: an operator action taken with a worker's credential must be
// refused by the server, not stored as the worker's). Without it, the
// role is the connection's (see DefaultWriterRole).
func WithWriterRole(role string) Option {
	return func(o *options) error {
		if err := validWriterRole(role); err != nil {
			return err
		}
		o.writerRole = role
		return nil
	}
}
