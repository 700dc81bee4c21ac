package eventlog

import (
	"fmt"
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
	// EventsStream holds every conversation's events, one subject each.
	EventsStream string
	// RequestsStream is the work queue of chat requests.
	RequestsStream string
	// SnapshotsBucket caches the latest projection of each conversation.
	SnapshotsBucket string
	// SnapshotObjectsBucket is the object store holding snapshots too
	// large for one message; the snapshots bucket then holds a reference.
	SnapshotObjectsBucket string
	// TemplatesBucket holds system prompt templates.
	TemplatesBucket string
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
	}
}

// EventsSubject is the subject of one conversation's events. The ID must
// have passed events.ValidateConversationID, or it could widen the subject.
func (n Names) EventsSubject(conversation string) string {
	return n.Prefix + ".events." + conversation
}

// EventsWildcard matches every conversation's events subject.
func (n Names) EventsWildcard() string { return n.Prefix + ".events.>" }

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
