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
	// BackgroundBucket lists the background responses the recording
	// gateways ask the provider about (see BackgroundResponses).
	BackgroundBucket string
	// GatewaysBucket lists the recording gateways that run (see
	// Gateways).
	GatewaysBucket string
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
		BackgroundBucket:      up + "_BACKGROUND",
		GatewaysBucket:        up + "_GATEWAYS",
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

// EventsSubject is the legacy subject of one conversation's events, where
// steps were stored before each writing role had its own
// (EventsRoleSubject); they are read as before, unattributed:
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

// WriterRoles are the roles that write events, each on subjects of its
// own (EventsRoleSubject): the admin (operator actions, imports, forks,
// repairs) and the workers (the steps of the requests they serve, and the
// recording gateway's). natsauth lets each role's credential publish to
// its own subjects only.
var WriterRoles = []string{"admin", "worker"}

// eventsToken is the token after the prefix of role's events subjects:
// "events" for the steps stored before roles had subjects (role ""),
// "events-<role>" for a role's.
func eventsToken(role string) string {
	if role == "" {
		return "events"
	}
	return "events-" + role
}

// eventsTail is what follows the events token in a conversation's
// subjects: .<conversation> with one event stream, .<shard>.<conversation>
// with several.
func (n Names) eventsTail(conversation string) string {
	if n.Shards() == 1 {
		return "." + conversation
	}
	return "." + strconv.Itoa(ShardOf(conversation, n.Shards())) + "." + conversation
}

// EventsRoleSubject is the subject a writer of role role appends a
// conversation's steps to: <prefix>.events-<role>.<conversation> (with
// the shard before the conversation when there are several event
// streams). The server lets each role publish to its own subjects only
// (see natsauth), so the subject a step is stored on says which role
// wrote it, and the writer cannot say otherwise. EventsSubject is the
// subject of the steps written before roles had subjects (unattributed).
func (n Names) EventsRoleSubject(conversation, role string) string {
	return n.Prefix + "." + eventsToken(role) + n.eventsTail(conversation)
}

// EventsFilter matches every subject of a conversation's steps, its
// legacy subject (EventsSubject) and each role's (EventsRoleSubject):
// <prefix>.*.<conversation>. In the events stream only those subjects
// have that shape, so it is the filter of the conversation's reads and
// the subject an append's expected-sequence check covers
// (Nats-Expected-Last-Subject-Sequence-Subject): the conversation is one
// ordered log whoever writes it, and a conversation written before roles
// had subjects goes on from its legacy steps without a lookup.
func (n Names) EventsFilter(conversation string) string {
	return n.Prefix + ".*" + n.eventsTail(conversation)
}

// EventsRoleWildcard matches every subject role writes steps to, in every
// event stream: what natsauth lets that role publish to.
func (n Names) EventsRoleWildcard(role string) string {
	return n.Prefix + "." + eventsToken(role) + ".>"
}

// EventsWildcards are every events subject of the installation, legacy
// and each writer role's: what a live view may subscribe to.
func (n Names) EventsWildcards() []string {
	out := []string{n.EventsWildcard()}
	for _, r := range WriterRoles {
		out = append(out, n.EventsRoleWildcard(r))
	}
	return out
}

// EventsStreamSubjects are the subjects of event stream k: the legacy
// ones (EventsShardWildcard) and each writer role's.
func (n Names) EventsStreamSubjects(k int) []string {
	out := []string{n.EventsShardWildcard(k)}
	for _, r := range WriterRoles {
		if n.Shards() == 1 {
			out = append(out, n.EventsRoleWildcard(r))
		} else {
			out = append(out, n.Prefix+"."+eventsToken(r)+"."+strconv.Itoa(k)+".*")
		}
	}
	return out
}

// SplitEventsSubject returns the conversation and the writer's role of an
// events subject: role "" for a legacy subject (EventsSubject), ok false
// for a subject that is not an events subject of this installation.
func (n Names) SplitEventsSubject(subject string) (conversation, role string, ok bool) {
	rest, found := strings.CutPrefix(subject, n.Prefix+".")
	if !found {
		return "", "", false
	}
	tok, rest, found := strings.Cut(rest, ".")
	if !found {
		return "", "", false
	}
	switch r, isRole := strings.CutPrefix(tok, "events-"); {
	case tok == "events":
	case isRole && r != "":
		role = r
	default:
		return "", "", false
	}
	if n.Shards() > 1 {
		if _, rest, found = strings.Cut(rest, "."); !found {
			return "", "", false
		}
	}
	if rest == "" || strings.Contains(rest, ".") {
		return "", "", false
	}
	return rest, role, true
}

// EventsWildcard matches every conversation's legacy events subject
// (EventsSubject), in every event stream.
func (n Names) EventsWildcard() string { return n.Prefix + ".events.>" }

// EventsShardWildcard is the subjects of event stream k: every subject
// when there is one stream (<prefix>.events.>, as before shards existed),
// <prefix>.events.<k>.* when there are several. These are the legacy
// subjects (EventsSubject); see EventsStreamSubjects for all of a
// stream's.
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

// PartitionsOf is how many partitions the requests stream whose
// configuration is cfg spreads chat requests over (its subject transform),
// for a reader that looked the stream up without Open.
func PartitionsOf(cfg jetstream.StreamConfig) int { return partitionsOf(cfg.SubjectTransform) }

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

// WorkersPing is the subject on which turnlog status asks the workers who
// they are; each says so on WorkersStatus. Core NATS, never persisted.
func (n Names) WorkersPing() string { return n.Prefix + ".workers.ping" }

// WorkersStatus is where workers publish their status when pinged: not as
// a reply, since a role that may answer requests may publish once to
// whatever reply subject a request names, stored streams' included.
func (n Names) WorkersStatus() string { return n.Prefix + ".workers.status" }

// GatewayInstance is the subject a running recording gateway answers on,
// by the instance ID its calls' inference.started names (Log.Alive);
// core NATS, never persisted.
func (n Names) GatewayInstance(instance string) string { return n.Prefix + ".gateway." + instance }

// GatewayInstances matches every GatewayInstance subject.
func (n Names) GatewayInstances() string { return n.Prefix + ".gateway.*" }

// ErasedSubject is where Erase announces each conversation it erased (a
// core NATS message holding the conversation's ID): a process that keeps
// conversations in memory (a gateway's caches) lets it go (Log.OnErase).
func (n Names) ErasedSubject() string { return n.Prefix + ".erased" }

// ConversationOf returns the conversation ID at the end of an events or chat
// subject.
func (n Names) ConversationOf(subject string) string {
	if i := strings.LastIndexByte(subject, '.'); i >= 0 {
		return subject[i+1:]
	}
	return subject
}
