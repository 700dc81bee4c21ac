package eventlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// Erased says what Erase removed.
type Erased struct {
	// Messages is how many event messages (steps) were purged.
	Messages uint64 `json:"messages"`
	// Snapshot is true when a snapshot was deleted.
	Snapshot bool `json:"snapshot"`
	// Requests is how many pending chat requests were purged.
	Requests uint64 `json:"requests"`
	// History is true when a history cache was deleted.
	History bool `json:"history"`
	// Threading is how many of the recording gateway's threading entries
	// were purged (calls.IndexedKeys).
	Threading int `json:"threading"`
	// Background is how many of the gateways' background responses of
	// the conversation (BackgroundResponses) were dropped from their list.
	Background int `json:"background"`
	// DeadLetters is how many dead letters of requests sent to the
	// conversation were deleted (they keep the request as it was sent).
	DeadLetters int `json:"dead_letters"`
}

// Erase removes everything stored about a conversation: its events (a
// subject-filtered purge of the events stream; events are never deleted one
// by one), its snapshot (purged, so no old value stays in the bucket's
// history, and a large snapshot's object deleted with its chunks) and its pending chat requests (the requests stream stores them
// as <prefix>.chat.<partition>.<conversation>, so the purge filters on
// <prefix>.chat.*.<conversation>). The dead letters of requests sent
// to it go too: they keep each request as it was sent. It exists for privacy requests; the
// conversation ID can be used again afterwards and starts empty. The
// recording gateway's threading entries of its calls go too (the state
// each call left, found from the events; see calls.IndexedKeys), and the
// erasure is announced to running gateways, which let go of what they
// keep of the conversation in memory (OnErase), and noted with its time
// in the threading index (calls.ErasedKey, by a hash of the ID), so that a
// call a gateway spooled before it is not recorded afterwards.
//
// Erasing a conversation that has nothing stored is not an error: Erased
// is then all zero. A request or a gateway call in flight meanwhile does
// not write the conversation back: its next append is refused (the log
// moved), and the worker, finding the conversation erased after the
// request was sent (ErasedAfter), drops the request; the gateway, finding
// the call's input gone (Holds), records nothing more of the call.
func (l *Log) Erase(ctx context.Context, conversation string) (Erased, error) {
	var out Erased
	if err := events.ValidateConversationID(conversation); err != nil {
		return out, fmt.Errorf("erase: %w", err)
	}
	if err := l.ensureHandles(ctx); err != nil {
		return out, fmt.Errorf("erase %s: %w", conversation, err)
	}
	// Requests first: a pending request processed between the two purges
	// would write new events after the events purge.
	reqs, err := l.requestsStream(ctx)
	if err != nil {
		return out, fmt.Errorf("erase %s: %w", conversation, err)
	}
	reqSubject := l.names.Prefix + ".chat.*." + conversation
	if out.Requests, err = purge(ctx, reqs, reqSubject); err != nil {
		return out, fmt.Errorf("erase %s: pending requests: %w", conversation, err)
	}
	// Noted before the events go, with its time: a gateway call or a chat
	// request that finds the conversation emptied by what follows, made
	// before now, belongs to what is erased and is not recorded (a call a
	// gateway spooled while NATS was away, too).
	// (A read-only log, which cannot create the index, is refused the
	// purges below.)
	note := map[string]string{calls.ErasedKey(conversation): time.Now().UTC().Format(time.RFC3339Nano)}
	threads, err := l.Threads(ctx)
	if err == nil {
		err = storageFull(threads.Put(ctx, note))
	}
	// A full store takes no note, and erasing is how its space is freed:
	// the note is written once the events are gone (nothing could be
	// written meanwhile, an in-flight call's step neither).
	noteLater := errors.Is(err, ErrStorageFull)
	if err != nil && !noteLater && !errors.Is(err, errNotProvisioned) {
		return out, fmt.Errorf("erase %s: note the erasure: %w", conversation, err)
	}
	// The gateway's threading entries are found from the events, so
	// before they go (an event that cannot be read ends the search: erase
	// must work on a damaged conversation too).
	threadKeys, _ := calls.IndexedKeys(conversation, l.streamEvents(ctx, conversation))
	// Its legacy subject and each role's, in one purge.
	if out.Messages, err = purge(ctx, l.streamFor(conversation), l.Names().EventsFilter(conversation)); err != nil {
		return out, fmt.Errorf("erase %s: events: %w", conversation, err)
	}
	if noteLater {
		if err := threads.Put(ctx, note); err != nil {
			return out, fmt.Errorf("erase %s: note the erasure (its events are erased): %w", conversation, err)
		}
	}
	if _, err := l.snaps.Get(ctx, conversation); err == nil {
		out.Snapshot = true
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return out, fmt.Errorf("erase %s: snapshot: %w", conversation, err)
	}
	if out.Snapshot {
		if err := l.snaps.Purge(ctx, conversation); err != nil {
			return out, fmt.Errorf("erase %s: snapshot: %w", conversation, err)
		}
	}
	// A large snapshot's object, after the value that refers to it; also
	// one a failed save left without a reference.
	deleted, err := l.deleteSnapshotObject(ctx, conversation)
	if err != nil {
		return out, fmt.Errorf("erase %s: snapshot object: %w", conversation, err)
	}
	out.Snapshot = out.Snapshot || deleted
	if out.History, err = l.dropHistory(ctx, conversation); err != nil {
		return out, fmt.Errorf("erase %s: %w", conversation, err)
	}
	if out.Threading, err = l.purgeThreading(ctx, threadKeys); err != nil {
		return out, fmt.Errorf("erase %s: %w", conversation, err)
	}
	if out.Background, err = l.purgeBackground(ctx, conversation); err != nil {
		return out, fmt.Errorf("erase %s: %w", conversation, err)
	}
	if out.DeadLetters, err = l.dropDeadLetters(ctx, conversation); err != nil {
		return out, fmt.Errorf("erase %s: %w", conversation, err)
	}
	// Announced to the processes that keep conversations in memory, at
	// most once: one that misses it (disconnected then) keeps the
	// conversation until its caches let it go, and never writes it back
	// (its appends are fenced). The erasure stands either way.
	if err := l.nc.Publish(l.Names().ErasedSubject(), []byte(conversation)); err == nil {
		fctx, cancel := context.WithTimeout(ctx, announceTimeout)
		_ = l.nc.FlushWithContext(fctx)
		cancel()
	}
	return out, nil
}

// announceTimeout bounds the wait for the server to take an erasure's
// announcement.
const announceTimeout = 5 * time.Second

// OnErase calls fn with each conversation an Erase announces, from any
// process, until stop is called: how a gateway lets an erased
// conversation go from its memory. A message on the subject that is not a
// conversation ID (another client's) is ignored. fn runs on the
// subscription's goroutine, one call at a time.
func (l *Log) OnErase(fn func(conversation string)) (stop func(), err error) {
	sub, err := l.nc.Subscribe(l.Names().ErasedSubject(), func(m *nats.Msg) {
		if conv := string(m.Data); events.ValidateConversationID(conv) == nil {
			fn(conv)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("follow erasures: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// purge removes every message of s on subject (which may hold wildcards)
// and returns how many there were.
func purge(ctx context.Context, s jetstream.Stream, subject string) (uint64, error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	if n == 0 {
		return 0, nil
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return 0, err
	}
	return n, nil
}

// purgeThreading purges keys from the gateway's threading bucket (none
// when it was never created) and returns how many it purged.
func (l *Log) purgeThreading(ctx context.Context, keys []string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	kv, err := l.js.KeyValue(ctx, l.names.ThreadsBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("the gateway's threading index: %w", err)
	}
	for i, k := range keys {
		if err := kv.Purge(ctx, k); err != nil {
			return i, fmt.Errorf("the gateway's threading entry %s: %w", k, err)
		}
	}
	return len(keys), nil
}

// purgeBackground drops conv's entries from the gateways' background
// responses (none when the bucket was never created) and returns how many
// it dropped.
func (l *Log) purgeBackground(ctx context.Context, conv string) (int, error) {
	kv, err := l.js.KeyValue(ctx, l.names.BackgroundBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("the gateway's background responses: %w", err)
	}
	b := &BackgroundResponses{js: l.js, kv: kv, stream: "KV_" + l.names.BackgroundBucket}
	var ids []string
	err = b.Each(ctx, func(r BackgroundResponse, err error) bool {
		if err == nil && r.Conversation == conv {
			ids = append(ids, r.ResponseID)
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		if err := b.Delete(ctx, conv, id); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// streamEvents yields a conversation's events read from the events stream
// alone: neither read from nor written to the history cache, which erase
// removes (a read that cached the history would leave it to be removed).
func (l *Log) streamEvents(ctx context.Context, conversation string) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		last, err := l.lastStored(ctx, conversation)
		if err != nil || last == nil {
			if err != nil {
				yield(events.Event{}, err)
			}
			return
		}
		for m, err := range l.readFrom(ctx, conversation, last, 0, "") {
			if errors.Is(err, ErrForeignMessage) {
				continue // not the conversation's
			}
			if err != nil {
				yield(events.Event{}, err)
				return
			}
			for _, e := range m.events {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}
