package eventlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
)

// Watch yields the conversation's events appended after the message at
// afterSeq, as they arrive, until ctx ends. afterPos is the position of the
// last event already seen (Turn.Events), so positions continue from it.
// Pass a loaded Turn's Seq and Events to follow it live without a gap.
// A message turnlog did not write (ErrForeignMessage) is passed over
// (WatchWithForeign names it); one with turnlog's headers that is not a step of the conversation is yielded
// as a *CorruptMessageError, and the watch goes on if the caller does.
//
// It creates no consumer: it subscribes to the conversation's events
// subject, whose messages (the appends, as they are published) are only a
// notice that something may have been stored, and reads what was stored
// with direct gets, as EventsAfter does. So a client needs no right to
// create consumers on the events stream, a right nats-server cannot grant
// without also letting it create durable consumers that fill the stream's
// limit, or push consumers that deliver to any subject (issue 24). A notice
// can come before the server stored the message, or for an append it
// refused: the read after a notice that finds nothing is tried again a few
// times, and the log is read every watchResync besides, for notices lost
// on a slow connection.
func (l *Log) Watch(ctx context.Context, conversation string, afterSeq uint64, afterPos int) iter.Seq2[Record, error] {
	return l.watch(ctx, conversation, afterSeq, afterPos, false)
}

// WatchWithForeign is Watch that also yields, as they arrive, the messages
// turnlog did not write, each as a Record holding its Seq alone with a
// *ForeignMessageError, which the caller may go on past as past a
// *CorruptMessageError: what a live view that reports what landed (the
// HTTP API's stream) uses, so that nothing stored on a conversation's
// subjects passes it without a word.
func (l *Log) WatchWithForeign(ctx context.Context, conversation string, afterSeq uint64, afterPos int) iter.Seq2[Record, error] {
	return l.watch(ctx, conversation, afterSeq, afterPos, true)
}

// watch is Watch, yielding foreign messages when foreign is set.
func (l *Log) watch(ctx context.Context, conversation string, afterSeq uint64, afterPos int, foreign bool) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := events.ValidateConversationID(conversation); err != nil {
			yield(Record{}, err)
			return
		}
		n, err := l.shardCount(ctx, conversation)
		if err != nil {
			yield(Record{}, fmt.Errorf("watch %s: %w", conversation, err))
			return
		}
		bell := make(chan struct{}, 1)
		ring := func(*nats.Msg) {
			select {
			case bell <- struct{}{}:
			default:
			}
		}
		var subs []*nats.Subscription
		defer func() {
			for _, s := range subs {
				_ = s.Unsubscribe()
			}
		}()
		for _, subj := range watchSubjects(l.names.WithEventShards(n), conversation) {
			s, err := l.nc.Subscribe(subj, ring)
			if err != nil {
				yield(Record{}, fmt.Errorf("watch %s: %w", conversation, err))
				return
			}
			subs = append(subs, s)
		}
		// The subscriptions are in place before the first read, so a step
		// stored after the read rings.
		fctx, cancel := context.WithTimeout(ctx, watchFlushTimeout)
		err = l.nc.FlushWithContext(fctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				yield(Record{}, fmt.Errorf("watch %s: %w", conversation, err))
			}
			return
		}
		last, pos := afterSeq, afterPos
		resync := time.NewTicker(watchResync)
		defer resync.Stop()
		retry := time.NewTimer(time.Hour)
		retry.Stop()
		defer retry.Stop()
		retries, backoff := 0, watchRetryFirst
		for {
			got := false
			for m, err := range l.messages(ctx, conversation, last+1, 0) {
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					if errors.Is(err, ErrForeignMessage) && m.seq > last {
						last, got = m.seq, true
						if foreign && !yield(Record{Seq: m.seq}, fmt.Errorf("watch %s: %w", conversation, unwrapRead(err))) {
							return
						}
						continue
					}
					if errors.Is(err, ErrCorruptMessage) && m.seq > last {
						// Named; the caller may go on past it.
						last, got = m.seq, true
						if !yield(Record{Seq: m.seq}, fmt.Errorf("watch %s: %w", conversation, unwrapRead(err))) {
							return
						}
						continue
					}
					yield(Record{}, fmt.Errorf("watch %s: %w", conversation, unwrapRead(err)))
					return
				}
				last, got = m.seq, true
				for _, e := range m.events {
					pos++
					if !yield(Record{Seq: m.seq, Pos: pos, MsgID: m.msgID, Writer: m.writer, Event: e}, nil) {
						return
					}
				}
			}
			if got {
				retries, backoff = 0, watchRetryFirst
				retry.Stop()
			} else if retries > 0 {
				// A notice with nothing stored yet: try again, a few
				// times, sooner than the resync.
				retries--
				retry.Reset(backoff)
				backoff *= 2
			}
			select {
			case <-ctx.Done():
				return
			case <-bell:
				retries, backoff = watchRetries, watchRetryFirst
			case <-retry.C:
			case <-resync.C:
			}
		}
	}
}

// watchFlushTimeout bounds the wait for the server to confirm a watch's
// subscriptions.
const watchFlushTimeout = 10 * time.Second

// watchResync is how often a watch reads the log without a notice.
const watchResync = 2 * time.Second

// A notice whose step is not readable yet is read again after
// watchRetryFirst, doubling, watchRetries times (about 0.5 s in all).
const (
	watchRetries    = 9
	watchRetryFirst = time.Millisecond
)

// watchSubjects are the subjects whose messages tell a watch of
// conversation that a step may have been stored: its legacy subject and
// each writer role's, one subscription each (a client may subscribe to
// these, not to <prefix>.*.<conversation>, which would take in other
// subjects than the events').
func watchSubjects(n Names, conversation string) []string {
	out := []string{n.EventsSubject(conversation)}
	for _, r := range WriterRoles {
		out = append(out, n.EventsRoleSubject(conversation, r))
	}
	return out
}

// unwrapRead drops the "read <conversation>: " that messages puts before
// its errors, which the watch words itself.
func unwrapRead(err error) error {
	if u := errors.Unwrap(err); u != nil && strings.HasPrefix(err.Error(), "read ") {
		return u
	}
	return err
}

// EventsAfter yields the conversation's events stored after the message at
// afterSeq, once, up to the end as the answering replica knows it: what
// Watch would yield so far. Positions count on from afterPos. It uses
// direct gets, which any replica answers, so it works while the stream
// elects a leader (a replica may lag the leader by the last few messages).
// Messages turnlog did not write are passed over, as by Events.
func (l *Log) EventsAfter(ctx context.Context, conversation string, afterSeq uint64, afterPos int) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := events.ValidateConversationID(conversation); err != nil {
			yield(Record{}, err)
			return
		}
		pos := afterPos
		for m, err := range l.messages(ctx, conversation, afterSeq+1, 0) {
			if errors.Is(err, ErrForeignMessage) {
				continue
			}
			if err != nil {
				yield(Record{}, err)
				return
			}
			for _, e := range m.events {
				pos++
				if !yield(Record{Seq: m.seq, Pos: pos, MsgID: m.msgID, Writer: m.writer, Event: e}, nil) {
					return
				}
			}
		}
	}
}

// Conversation describes one stored conversation.
type Conversation struct {
	ID string `json:"id"`
	// Messages is how many steps (messages) it holds.
	Messages uint64 `json:"messages"`
}

// Conversations lists every conversation that has events, sorted by ID.
func (l *Log) Conversations(ctx context.Context) ([]Conversation, error) {
	if err := l.ensureHandles(ctx); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	out := []Conversation{}
	index := map[string]int{}
	names := l.Names()
	for k, stream := range l.shards {
		// A conversation has its legacy subject and one per writing
		// role: one subject filter each.
		for _, filter := range names.EventsStreamSubjects(k) {
			info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
			if err != nil {
				return nil, fmt.Errorf("list conversations: %w", err)
			}
			for subj, n := range info.State.Subjects {
				id, _, ok := names.SplitEventsSubject(subj)
				if !ok {
					continue
				}
				if i, seen := index[id]; seen {
					out[i].Messages += n
					continue
				}
				index[id] = len(out)
				out = append(out, Conversation{ID: id, Messages: n})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
