package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// ErasedAfter reports whether conversation conv was erased after at, a
// time the server stamped (a chat request's, from its message's
// metadata). It is how a worker holding a request when the conversation
// was erased tells that request from one sent after the erasure: the
// first belongs to what was erased and must not be written back into the
// log, the second starts the conversation anew.
//
// The answer comes from the note Erase leaves in the threading index
// (calls.ErasedKey), by the time the server stored the note, so both times
// are servers' (on a cluster, two stream leaders' clocks). An installation
// that never erased anything has no index: false, without creating it.
func (l *Log) ErasedAfter(ctx context.Context, conv string, at time.Time) (bool, error) {
	kv, _ := l.erasures.Load().(jetstream.KeyValue)
	if kv == nil {
		var err error
		kv, err = l.js.KeyValue(ctx, l.names.ThreadsBucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read erasures: %w", err)
		}
		l.erasures.Store(kv)
	}
	e, err := kv.Get(ctx, calls.ErasedKey(conv))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read erasures: %w", err)
	}
	return e.Created().After(at), nil
}

// Holds reports whether the log still holds message seq (a stream
// sequence an append returned) as one of conversation's messages. It is
// false once the conversation was erased: a purge removes its messages and
// stream sequences are never used again, so a writer whose next append is
// refused can tell a conversation that moved on (reload and go on) from
// one erased under it (write nothing more: what it would write belongs to
// what was erased). The stream answers (its leader when a direct get
// says "not found"), not a replica that may lag or a mirror.
func (l *Log) Holds(ctx context.Context, conversation string, seq uint64) (bool, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return false, fmt.Errorf("holds: %w", err)
	}
	if err := l.ensureHandles(ctx); err != nil {
		return false, fmt.Errorf("holds %s: %w", conversation, err)
	}
	m, err := l.MessageAt(ctx, l.streamFor(conversation), seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("holds %s: message %d: %w", conversation, seq, err)
	}
	conv, _, ok := l.Names().SplitEventsSubject(m.Subject)
	return ok && conv == conversation, nil
}
