package eventlog

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultPrefix is the subject prefix and stream name stem used unless
// WithPrefix says otherwise.
const DefaultPrefix = "turnlog"

// Names are the subjects, streams and buckets of one turnlog installation.
// Several installations can share a NATS account with different prefixes.
type Names struct {
	Prefix string
	// EventsStream holds every conversation's events, one subject each,
	// when the installation has one event stream (EventShards 0 or 1, the
	// default). With more, it is the stem of the shard streams' names
	// (EventsShardStream) and no stream has this name.
	EventsStream string
	// EventShards is how many event streams conversations are spread over
	// (0 means 1). It is fixed when the installation is created: a
	// conversation's stream follows from it (ShardOf), so changing it would
	// move conversations away from where they are stored.
	EventShards int
	// RequestsStream is the work queue of chat requests.
	RequestsStream string
	// SnapshotsBucket caches the latest projection of each conversation.
	SnapshotsBucket string
	// SnapshotObjectsBucket is the object store holding snapshots too
	// large for one message; the snapshots bucket then holds a reference.
	SnapshotObjectsBucket string
	// TemplatesBucket holds system prompt templates.
	TemplatesBucket string
	// DeadLettersStream keeps the chat requests that could not end in a
	// conversation (see DeadLetter).
	DeadLettersStream string
	// RequestIDsBucket remembers which conversation a client-chosen
	// request ID was sent to (see ClaimRequestID).
	RequestIDsBucket string
	// HistoryBucket caches each conversation's messages in one value, for
	// reads of whole histories (a cache, rebuildable from the events).
	HistoryBucket string
	// ThreadsBucket is the recording gateway's threading index (see
	// Threads).
	ThreadsBucket string
}

// NamesFor derives every name from a prefix: "turnlog" gives stream
// TURNLOG_EVENTS and subjects turnlog.events.<conversation>.
func NamesFor(prefix string) Names {
	up := strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(prefix))
	return Names{
		Prefix:                prefix,
		EventsStream:          up + "_EVENTS",
		RequestsStream:        up + "_REQUESTS",
		SnapshotsBucket:       up + "_SNAPSHOTS",
		SnapshotObjectsBucket: up + "_SNAPSHOT_OBJECTS",
		TemplatesBucket:       up + "_TEMPLATES",
		DeadLettersStream:     up + "_DEAD_LETTERS",
		RequestIDsBucket:      up + "_REQUEST_IDS",
		HistoryBucket:         up + "_HISTORY",
		ThreadsBucket:         up + "_THREADS",
	}
}

// WithEventShards returns the names of the installation with k event
// streams.
func (n Names) WithEventShards(k int) Names {
	n.EventShards = k
	return n
}

// Shards is how many event streams the installation has, at least 1.
func (n Names) Shards() int { return max(n.EventShards, 1) }

// ShardOf is the event stream (0 to shards-1) that holds a conversation:
// FNV-1a (32 bits) of the conversation ID modulo shards. It is the hash of
// nats-server's subject mapping function partition(shards,1) applied to
// <prefix>.events.<conversation>, so any NATS client can compute it, and
// the nats CLI shows it:
//
//	nats server mapping '<prefix>.events.*' '<prefix>.events.{{partition(N,1)}}.{{wildcard(1)}}' <prefix>.events.<conversation>
func ShardOf(conversation string, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(conversation))
	return int(h.Sum32() % uint32(shards))
}

// EventsShardStream is the name of event stream k: EventsStream itself
// when there is one, EventsStream_<k> (TURNLOG_EVENTS_0, ...) when there
// are several.
func (n Names) EventsShardStream(k int) string {
	if n.Shards() == 1 {
		return n.EventsStream
	}
	return n.EventsStream + "_" + strconv.Itoa(k)
}

// EventStreams lists every event stream of the installation.
func (n Names) EventStreams() []string {
	out := make([]string, n.Shards())
	for k := range out {
		out[k] = n.EventsShardStream(k)
	}
	return out
}

// EventsStreamOf is the stream that holds a conversation's events.
func (n Names) EventsStreamOf(conversation string) string {
	return n.EventsShardStream(ShardOf(conversation, n.Shards()))
}

// EventsSubject is the subject of one conversation's events:
// <prefix>.events.<conversation> with one event stream, and
// <prefix>.events.<shard>.<conversation> with several, the shard being
// ShardOf. The ID must have passed events.ValidateConversationID, or it
// could widen the subject.
func (n Names) EventsSubject(conversation string) string {
	if n.Shards() == 1 {
		return n.Prefix + ".events." + conversation
	}
	return n.Prefix + ".events." + strconv.Itoa(ShardOf(conversation, n.Shards())) + "." + conversation
}

// EventsWildcard matches every conversation's events subject, in every
// event stream.
func (n Names) EventsWildcard() string { return n.Prefix + ".events.>" }

// EventsShardWildcard is the subjects of event stream k: every subject
// when there is one stream (<prefix>.events.>, as before shards existed),
// <prefix>.events.<k>.* when there are several.
func (n Names) EventsShardWildcard(k int) string {
	if n.Shards() == 1 {
		return n.EventsWildcard()
	}
	return n.Prefix + ".events." + strconv.Itoa(k) + ".*"
}

// ChatSubject is where chat requests for a conversation are published.
func (n Names) ChatSubject(conversation string) string { return n.Prefix + ".chat." + conversation }

// ChatWildcard matches every conversation's chat request subject. It has
// one token after "chat", so a subject with a '.' in the conversation is
// not captured by the stream at all.
func (n Names) ChatWildcard() string { return n.Prefix + ".chat.*" }

// ChatPartition is the filter of one partition's stored requests: the
// requests stream rewrites turnlog.chat.<conversation> to
// turnlog.chat.<partition>.<conversation> as it stores them, hashing the
// conversation ID, so a conversation always lands in the same partition.
func (n Names) ChatPartition(p int) string { return n.Prefix + ".chat." + strconv.Itoa(p) + ".*" }

func (n Names) chatTransform(partitions int) *jetstream.SubjectTransformConfig {
	return &jetstream.SubjectTransformConfig{
		Source:      n.ChatWildcard(),
		Destination: fmt.Sprintf("%s.chat.{{partition(%d,1)}}.{{wildcard(1)}}", n.Prefix, partitions),
	}
}

func partitionsOf(t *jetstream.SubjectTransformConfig) int {
	if t == nil {
		return DefaultPartitions
	}
	var n int
	if i := strings.Index(t.Destination, "{{partition("); i >= 0 {
		fmt.Sscanf(t.Destination[i+len("{{partition("):], "%d", &n)
	}
	if n < 1 {
		return DefaultPartitions
	}
	return n
}

// DeadLetterSubject is where dead letters of chat requests are stored.
func (n Names) DeadLetterSubject() string { return n.Prefix + ".dead.requests" }

// DeadLetterWildcard matches every dead-letter subject.
func (n Names) DeadLetterWildcard() string { return n.Prefix + ".dead.>" }

// DeltaSubject carries a conversation's ephemeral token deltas for live
// clients; it is core NATS, never persisted.
func (n Names) DeltaSubject(conversation string) string { return n.Prefix + ".delta." + conversation }

// WorkersPing is the subject workers answer with their status (turnlog
// status asks it); core NATS, never persisted.
func (n Names) WorkersPing() string { return n.Prefix + ".workers.ping" }

// ConversationOf returns the conversation ID at the end of an events or chat
// subject.
func (n Names) ConversationOf(subject string) string {
	if i := strings.LastIndexByte(subject, '.'); i >= 0 {
		return subject[i+1:]
	}
	return subject
}
