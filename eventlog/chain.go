package eventlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
)

// Reading a conversation's messages by their links.
//
// Append stores every step with the header Nats-Expected-Last-Subject-
// Sequence: the sequence of the conversation's previous message, which
// the server checked against the subject's last sequence before storing
// the step, and which it keeps with the message. So each conversation is a
// list linked backward through its messages, with links the server
// vouched for. Following them costs the server one lookup by sequence per
// message, whatever the stream's size; a read filtered by subject (the
// batched direct get) instead scans every message stored between two of
// the conversation's, which in a stream shared by many conversations is
// nearly all of them.
//
// A message without the header (written by another client), a link to a
// message that is gone or of another subject, or a list longer than the
// walk allows, sends the read back to the batched get, which needs none of
// this. So does a foreign message (see foreign.go): its link, if it has
// one, is a copy of another message's, which no server check vouched for.

// stored is one message of a conversation as read by sequence.
type stored struct {
	seq   uint64
	msgID string
	// subject is where it is stored, which says who wrote it; writer is
	// that role (see Log.writerOf).
	subject, writer string
	// prev is the conversation's previous message (0: none), when linked.
	prev   uint64
	linked bool
	data   []byte
	// time is when the stream stored it.
	time time.Time
	// foreign says why turnlog did not write it, "" when it may have
	// (see foreignReason).
	foreign string
}

// step decodes the stored message as a step of conversation (see
// readStep).
func (s *stored) step(conversation string) ([]events.Event, error) {
	if s.foreign != "" {
		return nil, &ForeignMessageError{Conversation: conversation, Seq: s.seq, Size: len(s.data), Subject: s.subject, Reason: s.foreign, Time: s.time}
	}
	return decodeStep(conversation, s.seq, s.time, s.data)
}

func (l *Log) storedFrom(m *jetstream.RawStreamMsg) *stored {
	s := &stored{seq: m.Sequence, msgID: m.Header.Get(jetstream.MsgIDHeader), subject: m.Subject,
		writer: l.writerOf(m.Subject, m.Header), data: m.Data, time: m.Time, foreign: foreignReason(m.Header)}
	if v := m.Header.Get(jetstream.ExpectedLastSubjSeqHeader); v != "" && s.foreign == "" {
		prev, err := strconv.ParseUint(v, 10, 64)
		s.prev, s.linked = prev, err == nil && prev < m.Sequence
	}
	return s
}

// lastStored returns the conversation's last message, nil when it has
// none, as the stream leader holds it (see leaderread.go): a read up to it
// shows every step acknowledged before it began.
func (l *Log) lastStored(ctx context.Context, conversation string) (*stored, error) {
	m, err := l.committedLast(ctx, conversation)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last message of %s: %w", conversation, err)
	}
	return l.storedFrom(m), nil
}

// storedAt returns the message at seq if it is one of the conversation's,
// nil when there is none or it is another conversation's.
func (l *Log) storedAt(ctx context.Context, conversation string, seq uint64) (*stored, error) {
	m, err := l.msgAt(ctx, conversation, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: message %d: %w", conversation, seq, err)
	}
	if !l.sameConversation(conversation, m.Subject) {
		return nil, nil
	}
	return l.storedFrom(m), nil
}

// How many messages a walk may follow before the batched read is
// cheaper: a tail after a snapshot is a few dozen messages (a snapshot is
// due every 100 events), a history without one may be longer.
const (
	maxTailWalk    = 256
	maxHistoryWalk = 4096
)

// maxBatchScan is how many messages of the stream, the conversation's and
// others', a batched read may have to step over for the links not to be
// worth following: the batch costs one round trip and a scan of that
// many messages on the server (~0.1 µs each), the walk a round trip per
// message of the conversation. Below it (a small stream, or a tail
// written in one go) the batch is cheaper. A variable for tests.
var maxBatchScan uint64 = 4096

// walkResult says how a walk ended.
type walkResult int

const (
	// walkReached: the walk reached the base: the messages are all the
	// conversation's messages after it.
	walkReached walkResult = iota
	// walkMissed: the links went from above the base to below it, so the
	// base is not one of the conversation's messages (it was erased and
	// written anew): whatever was built on the base is stale.
	walkMissed
	// walkGaveUp: a message without a link, a link to a message that is
	// not there, or more messages than the walk allows.
	walkGaveUp
)

// walkBack follows the links from last down to base (0: the start of the
// conversation) and returns the messages after base in log order.
func (l *Log) walkBack(ctx context.Context, conversation string, last *stored, base uint64, limit int) ([]*stored, walkResult, error) {
	out := []*stored{last}
	for m := last; ; {
		switch {
		case !m.linked:
			return nil, walkGaveUp, nil
		case m.prev == base:
			slices.Reverse(out)
			return out, walkReached, nil
		case m.prev < base:
			return nil, walkMissed, nil
		case len(out) == limit:
			return nil, walkGaveUp, nil
		}
		prev, err := l.storedAt(ctx, conversation, m.prev)
		if err != nil {
			return nil, walkGaveUp, err
		}
		if prev == nil {
			return nil, walkGaveUp, nil
		}
		out = append(out, prev)
		m = prev
	}
}

// after yields the conversation's messages after sequence base (0: all of
// them), decoded, in log order. When base > 0 it must still be the
// conversation's message with ID baseID (any ID when baseID is empty):
// otherwise the iteration yields errStaleBase. It reads the last message
// first, so that a base that is the last message costs one lookup. A read
// of the whole history starts from the history cache (see history.go)
// and writes it when it was missing or behind.
func (l *Log) after(ctx context.Context, conversation string, base uint64, baseID string) iter.Seq2[message, error] {
	return func(yield func(message, error) bool) {
		last, err := l.lastStored(ctx, conversation)
		if err != nil {
			yield(message{}, fmt.Errorf("read %s: %w", conversation, err))
			return
		}
		switch {
		case last == nil && base == 0:
			return // no messages
		case last == nil || last.seq < base:
			yield(message{}, fmt.Errorf("%w: message %d", errStaleBase, base))
			return
		case last.seq == base:
			if baseID != "" && last.msgID != baseID {
				yield(message{}, fmt.Errorf("%w: message %d", errStaleBase, base))
			}
			return
		}
		if base == 0 {
			if cached := l.cachedHistory(ctx, conversation, last); cached != nil {
				if done := l.fromCache(ctx, conversation, last, cached, yield); done {
					return
				}
			}
		}
		// Cache what a read of the whole history read, if it all links.
		caching, size := base == 0, 0
		var read []*stored
		for m, err := range l.readFrom(ctx, conversation, last, base, baseID) {
			if errors.Is(err, ErrCorruptMessage) || errors.Is(err, ErrForeignMessage) {
				// Named, and the caller may go on past it (see Events);
				// a history with one is not cached (the cache holds steps
				// that link one to the next).
				caching = false
				if !yield(m, err) {
					return
				}
				continue
			}
			if err != nil {
				yield(message{}, err)
				return
			}
			if caching {
				size += len(m.raw.data)
				caching = m.raw.linked && size <= maxHistoryCache
				read = append(read, m.raw)
			}
			if !yield(m, nil) {
				return
			}
		}
		if caching {
			l.cacheHistory(ctx, conversation, read)
		}
	}
}

// fromCache yields the cached messages and those stored after them, and
// writes the cache again when it was behind. It reports false, having
// yielded nothing, when the stream does not continue the cache (the
// conversation was erased and written anew): the caller then reads the
// stream.
func (l *Log) fromCache(ctx context.Context, conversation string, last *stored, cached []*stored, yield func(message, error) bool) bool {
	end := cached[len(cached)-1]
	var rest []message
	if end.seq < last.seq {
		for m, err := range l.readFrom(ctx, conversation, last, end.seq, end.msgID) {
			if err != nil {
				// A stale cache, or a message that is not a step: the
				// stream alone says what to show.
				return false
			}
			rest = append(rest, m)
		}
	}
	for _, m := range cached {
		evs, err := decodeStep(conversation, m.seq, m.time, m.data)
		if err != nil {
			yield(message{}, fmt.Errorf("read %s (history cache): %w", conversation, err))
			return true
		}
		if !yield(message{seq: m.seq, msgID: m.msgID, writer: m.writer, events: evs, raw: m}, nil) {
			return true
		}
	}
	all := cached
	for _, m := range rest {
		if !yield(m, nil) {
			return true
		}
		all = append(all, m.raw)
	}
	if len(rest) > 0 && !slices.ContainsFunc(rest, func(m message) bool { return !m.raw.linked }) {
		l.cacheHistory(ctx, conversation, all)
	}
	return true
}

// readFrom yields the conversation's messages after base up to last (or
// beyond, when the batched read sees later ones), following the links when
// the messages are far apart in the stream and with batched gets
// otherwise, and checks the base as after does.
func (l *Log) readFrom(ctx context.Context, conversation string, last *stored, base uint64, baseID string) iter.Seq2[message, error] {
	return func(yield func(message, error) bool) {
		limit := maxHistoryWalk
		if base > 0 {
			limit = maxTailWalk
		}
		res, msgs := walkGaveUp, []*stored(nil)
		if last.seq-base > maxBatchScan {
			var err error
			if msgs, res, err = l.walkBack(ctx, conversation, last, base, limit); err != nil {
				yield(message{}, err)
				return
			}
		}
		switch res {
		case walkMissed:
			if base > 0 {
				yield(message{}, fmt.Errorf("%w: message %d", errStaleBase, base))
				return
			}
		case walkReached:
			if base > 0 && baseID != "" {
				// The links prove the base was the conversation's last
				// message when the next one was stored; its ID proves it
				// is the message the Turn was built on (a stream deleted
				// and created anew numbers its messages from 1 again).
				at, err := l.storedAt(ctx, conversation, base)
				if err != nil {
					yield(message{}, err)
					return
				}
				if at == nil || at.msgID != baseID {
					yield(message{}, fmt.Errorf("%w: message %d", errStaleBase, base))
					return
				}
			}
			for _, m := range msgs {
				evs, err := m.step(conversation)
				if err != nil {
					// Named; the caller may go on past it (see Events).
					if !yield(message{seq: m.seq, msgID: m.msgID, raw: m}, fmt.Errorf("read %s: %w", conversation, err)) {
						return
					}
					continue
				}
				if !yield(message{seq: m.seq, msgID: m.msgID, writer: m.writer, events: evs, raw: m}, nil) {
					return
				}
			}
			return
		}
		// The batched read from base, which checks the base itself.
		verify := base > 0
		for m, err := range l.messages(ctx, conversation, base, last.seq) {
			if errors.Is(err, ErrForeignMessage) && verify && m.seq == base {
				// The base itself: a Turn may end with a foreign message
				// (see fold), checked as any other.
				err = nil
			}
			if (errors.Is(err, ErrCorruptMessage) || errors.Is(err, ErrForeignMessage)) && !(verify && m.seq == base) {
				if !yield(m, err) {
					return
				}
				continue
			}
			if err != nil {
				yield(message{}, err)
				return
			}
			if verify {
				verify = false
				if m.seq != base || (baseID != "" && m.msgID != baseID) {
					yield(message{}, fmt.Errorf("%w: message %d", errStaleBase, base))
					return
				}
				continue
			}
			if !yield(m, nil) {
				return
			}
		}
		if verify {
			yield(message{}, fmt.Errorf("%w: message %d", errStaleBase, base))
		}
	}
}
