package eventlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// ErrNotFound is returned when a conversation has no events, or fewer than
// the position asked for.
var ErrNotFound = errors.New("not found")

// Record is one event as stored: the message that carried it and its
// position in the conversation.
type Record struct {
	// Seq is the stream sequence of the message that carried the event.
	Seq uint64
	// Pos is the event's position in the conversation, counting from 1:
	// the n of <conversation>@<n>.
	Pos int
	// MsgID is the message's ID, <cause>:<step>.
	MsgID string
	// Writer is the role whose credential stored the message, as the
	// server let it publish to the role's subject (see
	// Names.EventsRoleSubject): "admin", "worker"; "" for a message
	// stored before roles had subjects (unattributed).
	Writer string
	events.Event
}

// readBatch is how many messages one direct batch get asks for.
const readBatch = 512

// maxMirrored is how many batches of one read a mirror may answer before
// the read turns to the stream's leader (see messages).
const maxMirrored = 3

// message is a stored step: its sequence, ID and decoded events, and the
// message as read (for the history cache).
type message struct {
	seq    uint64
	msgID  string
	writer string
	events []events.Event
	raw    *stored
}

// messages yields a conversation's messages from stream sequence from
// (inclusive) to the end, decoded, using batched direct gets: one round
// trip per readBatch messages, not one per message. One filter
// (Names.EventsFilter) reads the conversation's legacy and role subjects
// together, in log order. until, when not 0, is a message the read must
// reach (the conversation's last as the stream leader held it when the
// read began, see leaderread.go): what the direct gets did not reach of it
// is read from the leader. Without it (Watch, EventsAfter), the end is the
// end as the answering replica knows it.
func (l *Log) messages(ctx context.Context, conversation string, from, until uint64) iter.Seq2[message, error] {
	return func(yield func(message, error) bool) {
		n, err := l.shardCount(ctx, conversation)
		if err != nil {
			yield(message{}, fmt.Errorf("read %s: %w", conversation, err))
			return
		}
		names := l.names.WithEventShards(n)
		stream, subject := names.EventsStreamOf(conversation), names.EventsFilter(conversation)
		next := max(from, 1)
		if next == 1 && until > 0 && l.replicasMayLag() {
			// A replica that has not applied an erase still holds the
			// erased steps, before the conversation's first message as
			// the leader holds it: start there (leaderread.go).
			first, err := l.leaderGet(ctx, stream, leaderGetRequest{Seq: 1, NextFor: subject})
			if err != nil {
				yield(message{}, fmt.Errorf("read %s: its first message, from the stream leader: %w", conversation, err))
				return
			}
			next = first.Sequence
		}
		// pending is how many messages the last one read said were still
		// to come; a batch that ends with none while some are pending was
		// cut short (a dropped connection ends the responses without an
		// error), which must not pass for the end of the conversation.
		var pending uint64
		// read is the last message yielded; mirrored counts the batches
		// a mirror answered.
		var read uint64
		mirrored := 0
		var unanswered time.Time // when direct gets first found no responder
	batches:
		for {
			batch, err := jetstreamext.GetBatch(ctx, l.js, stream, readBatch,
				jetstreamext.GetBatchSeq(next), jetstreamext.GetBatchSubject(subject))
			if err != nil {
				if awaitResponders(ctx, err, &unanswered) {
					continue batches
				}
				yield(message{}, fmt.Errorf("read %s: %w", conversation, err))
				return
			}
			got := 0
			for raw, err := range batch {
				if errors.Is(err, jetstreamext.ErrNoMessages) {
					if pending > 0 && until < next {
						yield(message{}, fmt.Errorf("read %s: %d messages from sequence %d are gone", conversation, pending, next))
						return
					}
					break batches
				}
				if err != nil && got == 0 && awaitResponders(ctx, err, &unanswered) {
					continue batches
				}
				if err != nil {
					yield(message{}, fmt.Errorf("read %s: %w", conversation, err))
					return
				}
				fromServer(raw)
				if by := serverValue(raw.Header, jetstream.StreamHeader); by != stream {
					// A mirror made with mirror_direct answered: its copy
					// may lack the last steps, and holds those an erase
					// removed from the stream. Ask again (another member
					// of the queue group may answer), then the leader.
					if mirrored++; mirrored < maxMirrored {
						continue batches
					}
					if until >= next {
						break batches
					}
					yield(message{}, fmt.Errorf("read %s: %s's direct gets are answered by %s, a mirror made with mirror_direct, which may lack steps or still hold erased ones; turn its mirror_direct off",
						conversation, stream, by))
					return
				}
				got++
				read, next = raw.Sequence, raw.Sequence+1
				pending, _ = strconv.ParseUint(serverValue(raw.Header, "Nats-Num-Pending"), 10, 64)
				if !l.yieldStep(conversation, raw, yield) {
					return
				}
			}
			if got == 0 {
				if err := ctx.Err(); err != nil {
					yield(message{}, fmt.Errorf("read %s: %w", conversation, err))
					return
				}
				if (pending > 0 || !l.nc.IsConnected()) && until < next {
					yield(message{}, fmt.Errorf("read %s: the batch from sequence %d ended before its messages arrived (connection %s)",
						conversation, next, l.nc.Status()))
					return
				}
				break
			}
			if pending == 0 {
				break
			}
		}
		// The answering replica's end, or a batch whose responses a
		// dropped connection ended: not the end while until is ahead.
		l.leaderRest(ctx, conversation, stream, subject, next, until, read, yield)
	}
}

// EventsOnly yields the events of records, without their positions:
// what a fold that keeps no positions (check.Rebuild) reads.
func EventsOnly(records iter.Seq2[Record, error]) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		for rec, err := range records {
			if !yield(rec.Event, err) {
				return
			}
		}
	}
}

// Events yields every event of a conversation in log order, with its
// position. A message turnlog did not write (see ErrForeignMessage) is
// skipped; EventsWithForeign names it. A message with turnlog's headers
// that is not a step of the conversation (see ErrCorruptMessage) is
// yielded as a *CorruptMessageError, and iteration goes on after it if the
// caller goes on; any other error is yielded and ends it.
func (l *Log) Events(ctx context.Context, conversation string) iter.Seq2[Record, error] {
	return l.events(ctx, conversation, false)
}

// EventsWithForeign is Events that also yields, in log order, each
// message turnlog did not write as a Record holding its Seq alone with a
// *ForeignMessageError, which the caller may go on past as past a
// *CorruptMessageError: what a reader that reports what it read (replay,
// ls) uses, so that nothing on a conversation's subjects is passed over
// without a word.
func (l *Log) EventsWithForeign(ctx context.Context, conversation string) iter.Seq2[Record, error] {
	return l.events(ctx, conversation, true)
}

// events is Events, yielding foreign messages when foreign is set.
func (l *Log) events(ctx context.Context, conversation string, foreign bool) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := events.ValidateConversationID(conversation); err != nil {
			yield(Record{}, err)
			return
		}
		pos := 0
		for m, err := range l.after(ctx, conversation, 0, "") {
			if errors.Is(err, ErrForeignMessage) {
				if foreign && !yield(Record{Seq: m.seq}, err) {
					return
				}
				continue
			}
			if errors.Is(err, ErrCorruptMessage) {
				if !yield(Record{Seq: m.seq}, err) {
					return
				}
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

// Load returns the conversation's current Turn: the latest snapshot plus
// the events after it. A conversation without events gives an empty Turn
// (Seq 0), ready for its first append. When the tail was long, Load writes
// a fresh snapshot so the next load is short again.
func (l *Log) Load(ctx context.Context, conversation string) (*projector.Turn, error) {
	return l.load(ctx, conversation, -1, true)
}

// LoadAt returns the Turn as it stood after the conversation's n-th event
// (counting from 1; 0 is the empty Turn): what <conversation>@<n> names.
// Its Seq is the message that holds event n, so it is for reading, not for
// appending after.
func (l *Log) LoadAt(ctx context.Context, conversation string, n int) (*projector.Turn, error) {
	if n < 0 {
		return nil, fmt.Errorf("load %s@%d: positions count from 1", conversation, n)
	}
	return l.load(ctx, conversation, n, true)
}

// load folds a conversation up to event n, or to the end when n < 0,
// starting from the snapshot when useSnapshot is set and one is usable.
func (l *Log) load(ctx context.Context, conversation string, n int, useSnapshot bool) (*projector.Turn, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := l.ensureHandles(ctx); err != nil {
		return nil, fmt.Errorf("load %s: %w", conversation, err)
	}
	var turn *projector.Turn
	var lastID string
	if useSnapshot {
		turn, lastID = l.snapshot(ctx, conversation)
	}
	if turn != nil && n >= 0 && turn.Events > n {
		turn = nil // the snapshot is past the point asked for
	}
	if turn == nil {
		turn = projector.New(conversation)
	}
	turn, tail, lastID, err := l.fold(ctx, turn, lastID, n)
	if errors.Is(err, errStaleBase) {
		l.opts.logger.Warn("ignoring stale snapshot", "conversation", conversation, "err", err)
		return l.loadFromScratch(ctx, conversation, n)
	}
	if err != nil {
		return nil, err
	}
	if n >= 0 && turn.Events < n {
		return nil, fmt.Errorf("load %s@%d: %w: the conversation has %d events", conversation, n, ErrNotFound, turn.Events)
	}
	// A Turn that ends with a foreign message without an ID has nothing
	// to name it by (see SaveSnapshot): the next step's load saves it.
	if n < 0 && tail >= l.opts.snapshotEvery && !l.opts.readOnly && lastID != "" {
		if err := l.SaveSnapshot(ctx, turn, lastID); err != nil {
			l.opts.logger.Warn("snapshot not saved", "conversation", conversation, "err", err)
		}
	}
	return turn, nil
}

// errStaleBase: the Turn a fold started from (a snapshot, a cached Turn)
// no longer matches the log: its last message is gone or is another one.
var errStaleBase = errors.New("the log no longer holds the message the Turn ends with")

// fold applies to turn the conversation's events after turn.Seq, up to
// event n (to the end when n < 0). When turn.Seq > 0, the message at
// turn.Seq must still be there (with ID lastID, when given): otherwise the
// conversation was erased and written anew, and fold returns errStaleBase.
// It returns the Turn, how many events it applied and the last message's
// ID.
func (l *Log) fold(ctx context.Context, turn *projector.Turn, lastID string, n int) (*projector.Turn, int, string, error) {
	conversation := turn.Conversation
	tail := 0
	for m, err := range l.after(ctx, conversation, turn.Seq, lastID) {
		if errors.Is(err, errStaleBase) {
			return nil, 0, "", err
		}
		if errors.Is(err, ErrForeignMessage) {
			// Not a step: the Turn only ends with it, so that the next
			// append expects it as the conversation's last message.
			if n < 0 {
				turn.Seq, lastID = m.seq, m.msgID
			}
			continue
		}
		if err != nil {
			return nil, 0, "", fmt.Errorf("load %s: %w", conversation, err)
		}
		for _, e := range m.events {
			if n >= 0 && turn.Events >= n {
				break
			}
			if err := projector.Apply(turn, e); err != nil {
				return nil, 0, "", fmt.Errorf("load %s: %w", conversation, &UnappliableError{Conversation: conversation, Seq: m.seq, Err: err})
			}
			tail++
		}
		turn.Seq = m.seq
		lastID = m.msgID
		if n >= 0 && turn.Events >= n {
			break
		}
	}
	return turn, tail, lastID, nil
}

// CatchUp brings turn, a Turn of the conversation loaded or cached
// earlier, up to date by folding only the messages appended after it: far
// cheaper than Load when a few steps were written elsewhere. turn is
// changed in place. When the log no longer holds turn's last message (the
// conversation was erased), it loads the conversation anew.
func (l *Log) CatchUp(ctx context.Context, turn *projector.Turn) (*projector.Turn, error) {
	if err := events.ValidateConversationID(turn.Conversation); err != nil {
		return nil, fmt.Errorf("catch up: %w", err)
	}
	if err := l.ensureHandles(ctx); err != nil {
		return nil, fmt.Errorf("catch up %s: %w", turn.Conversation, err)
	}
	caught, _, _, err := l.fold(ctx, turn, "", -1)
	if errors.Is(err, errStaleBase) {
		return l.Load(ctx, turn.Conversation)
	}
	return caught, err
}

func (l *Log) loadFromScratch(ctx context.Context, conversation string, n int) (*projector.Turn, error) {
	if l.opts.readOnly {
		return l.load(ctx, conversation, n, false)
	}
	if err := l.snaps.Delete(ctx, conversation); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		l.opts.logger.Warn("stale snapshot not deleted", "conversation", conversation, "err", err)
	}
	if _, err := l.deleteSnapshotObject(ctx, conversation); err != nil {
		l.opts.logger.Warn("stale snapshot object not deleted", "conversation", conversation, "err", err)
	}
	return l.load(ctx, conversation, n, false)
}

// LastSeq returns the stream sequence of the conversation's last message (0
// when it has none) with one direct get, whatever the stream's size: the
// cheap check that a cached Turn is still current.
func (l *Log) LastSeq(ctx context.Context, conversation string) (uint64, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return 0, err
	}
	m, err := l.lastMsg(ctx, conversation)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("last sequence of %s: %w", conversation, err)
	}
	return m.Sequence, nil
}
