package eventlog

// This file holds the event shards: how many event streams an installation
// has, where that count is recorded, and which stream holds a conversation.
//
// With one shard (the default) the installation is what it always was:
// stream TURNLOG_EVENTS, subjects turnlog.events-<role>.<conversation> (and
// turnlog.events.<conversation> from before roles had subjects, see
// writers.go). With N > 1, stream TURNLOG_EVENTS_<k> holds subjects
// turnlog.events-<role>.<k>.* (and turnlog.events.<k>.*) and a
// conversation lives in shard k = ShardOf(conversation, N), the hash of
// nats-server's own partition() mapping function, so any NATS client finds
// it. Each shard stream records N and its k in its metadata; Open refuses
// another N than the recorded one, because a conversation must never move
// to another stream silently.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Metadata keys of a shard stream (stream metadata, set at creation).
const (
	// MetaEventShards holds how many event streams the installation has.
	MetaEventShards = "turnlog.event_shards"
	// MetaEventShard holds which shard (0 to N-1) the stream is.
	MetaEventShard = "turnlog.event_shard"
)

// ErrShardsDiffer is returned by Open when asked for another event shard
// count than the installation recorded.
var ErrShardsDiffer = errors.New("event shard count differs from the installation's")

// eventsConfig is the configuration of event stream k of an installation
// with n.Shards() streams.
func (l *Log) eventsConfig(n Names, k int) jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:        n.EventsShardStream(k),
		Description: "turnlog conversation events, one subject per conversation",
		Subjects:    n.EventsStreamSubjects(k),
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Duplicates:  l.opts.duplicates,
		AllowDirect: true,
		// Events are never edited; only a whole conversation is erased.
		DenyDelete: true,
	}
	if n.Shards() > 1 {
		cfg.Description = fmt.Sprintf("turnlog conversation events, shard %d of %d (conversations whose FNV-1a hash modulo %d is %d), one subject per conversation",
			k, n.Shards(), n.Shards(), k)
		cfg.Metadata = map[string]string{MetaEventShards: strconv.Itoa(n.Shards()), MetaEventShard: strconv.Itoa(k)}
	}
	return cfg
}

// provisionEvents finds the installation's event shard count, checks it
// against WithEventShards, and creates or upgrades every event stream.
func (l *Log) provisionEvents(ctx context.Context) error {
	recorded, found, err := l.recordedShards(ctx)
	if err != nil {
		return err
	}
	n := recorded
	switch want := l.opts.eventShards; {
	case recorded != 0 && want != 0 && want != recorded:
		return fmt.Errorf("%w: it has %d event streams (%s), asked for %d; a conversation's stream follows from the count, so open it with %d (--event-shards %d), or export and import into a new installation to change it",
			ErrShardsDiffer, recorded, l.names.WithEventShards(recorded).EventsShardStream(0), want, recorded, recorded)
	case recorded == 0 && want != 0:
		n = want
	case recorded == 0:
		n = 1
	}
	names := l.names.WithEventShards(n)
	shards := make([]jetstream.Stream, n)
	for k := range shards {
		var have jetstream.Stream
		if k == 0 {
			have = found
		}
		if shards[k], err = l.ensureFound(ctx, l.eventsConfig(names, k), have); err != nil {
			return err
		}
		if n > 1 {
			if err := checkShardMeta(shards[k].CachedInfo(), n, k); err != nil {
				return err
			}
		}
	}
	l.shards = shards
	l.eventShards.Store(int32(n))
	return nil
}

// recordedShards is the event shard count of the installation as its
// streams record it, 0 when it has no event stream yet, and the first
// event stream when it exists (so that Open looks it up once).
func (l *Log) recordedShards(ctx context.Context) (int, jetstream.Stream, error) {
	// The unsharded stream first, and only it when it exists: a role's
	// permissions name the streams of its installation only, and
	// JetStream refuses a shard stream beside it anyway (their subjects
	// overlap).
	single, err := l.js.Stream(ctx, l.names.EventsStream)
	switch {
	case err == nil:
		return 1, single, nil
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return 0, nil, fmt.Errorf("stream %s: %w", l.names.EventsStream, err)
	}
	first := l.names.WithEventShards(2).EventsShardStream(0)
	shard0, err := l.js.Stream(ctx, first)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return 0, nil, nil
	case err != nil:
		return 0, nil, fmt.Errorf("stream %s: %w", first, err)
	}
	meta := shard0.CachedInfo().Config.Metadata
	n, err := strconv.Atoi(meta[MetaEventShards])
	if err != nil || n < 2 || n > MaxEventShards {
		return 0, nil, fmt.Errorf("stream %s: metadata %s is %q, want the event shard count (2 to %d); it was not created by turnlog, or was changed by hand",
			first, MetaEventShards, meta[MetaEventShards], MaxEventShards)
	}
	return n, shard0, nil
}

// checkShardMeta makes sure a shard stream says it is shard k of n.
func checkShardMeta(info *jetstream.StreamInfo, n, k int) error {
	meta := info.Config.Metadata
	if meta[MetaEventShards] != strconv.Itoa(n) || meta[MetaEventShard] != strconv.Itoa(k) {
		return fmt.Errorf("stream %s: metadata says shard %q of %q, want shard %d of %d; it was not created by turnlog for this installation, or was changed by hand",
			info.Config.Name, meta[MetaEventShard], meta[MetaEventShards], k, n)
	}
	return nil
}

// streamFor is the event stream that holds a conversation; the log must be
// ready.
func (l *Log) streamFor(conversation string) jetstream.Stream {
	return l.shards[ShardOf(conversation, len(l.shards))]
}

// shardCount is the installation's event shard count. A log from Open
// knows it; an attached log learns it on first use without a stream lookup
// when it has one event stream: a direct get of the conversation's last
// message from TURNLOG_EVENTS that anything answers (the message or "not
// found") proves the stream exists, which any replica answers even while
// the stream elects a leader. Only when no server answers for that stream
// does it look the shard streams up.
func (l *Log) shardCount(ctx context.Context, conversation string) (int, error) {
	if n := l.eventShards.Load(); n > 0 {
		return int(n), nil
	}
	_, err := l.directLast(ctx, l.names.EventsStream, l.names.EventsSubject(conversation))
	if err == nil || errors.Is(err, jetstream.ErrMsgNotFound) {
		l.eventShards.CompareAndSwap(0, 1)
		return 1, nil
	}
	if !errors.Is(err, nats.ErrNoResponders) {
		return 0, err
	}
	n, _, lerr := l.recordedShards(ctx)
	if lerr != nil {
		return 0, lerr
	}
	if n == 0 {
		// No event stream at all: the direct get's error, as before
		// shards existed (callers tell it from an election by looking
		// the streams up).
		return 0, err
	}
	l.eventShards.CompareAndSwap(0, int32(n))
	return int(l.eventShards.Load()), nil
}

// eventsOf is the stream and subject of a conversation's events.
func (l *Log) eventsOf(ctx context.Context, conversation string) (stream, subject string, err error) {
	n, err := l.shardCount(ctx, conversation)
	if err != nil {
		return "", "", err
	}
	names := l.names.WithEventShards(n)
	return names.EventsStreamOf(conversation), names.EventsSubject(conversation), nil
}

// EventShards is the installation's event shard count as its streams
// record it, 0 when it has no event stream yet. A log from Open knows it;
// an attached log looks it up and keeps it, so that Names lists every
// event stream afterwards (what `turnlog status` shows without Open, which
// would fail on the first stream or bucket without a leader).
func (l *Log) EventShards(ctx context.Context) (int, error) {
	if n := l.eventShards.Load(); n > 0 {
		return int(n), nil
	}
	n, _, err := l.recordedShards(ctx)
	if err != nil || n == 0 {
		return 0, err
	}
	l.eventShards.CompareAndSwap(0, int32(n))
	return int(l.eventShards.Load()), nil
}
