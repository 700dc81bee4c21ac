package eventlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
)

// Watch yields the conversation's events appended after the message at
// afterSeq, as they arrive, until ctx ends. afterPos is the position of the
// last event already seen (Turn.Events), so positions continue from it.
// Pass a loaded Turn's Seq and Events to follow it live without a gap.
// A message that is not a step of the conversation is yielded as a
// *CorruptMessageError, and the watch goes on if the caller does.
func (l *Log) Watch(ctx context.Context, conversation string, afterSeq uint64, afterPos int) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := events.ValidateConversationID(conversation); err != nil {
			yield(Record{}, err)
			return
		}
		stream, subject, err := l.eventsOf(ctx, conversation)
		if err != nil {
			yield(Record{}, fmt.Errorf("watch %s: %w", conversation, err))
			return
		}
		cons, err := l.js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{subject},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    afterSeq + 1,
		})
		if err != nil {
			yield(Record{}, fmt.Errorf("watch %s: %w", conversation, err))
			return
		}
		msgs, err := cons.Messages()
		if err != nil {
			yield(Record{}, fmt.Errorf("watch %s: %w", conversation, err))
			return
		}
		defer msgs.Stop()
		go func() { <-ctx.Done(); msgs.Stop() }()
		pos := afterPos
		for {
			m, err := msgs.Next()
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					return
				}
				yield(Record{}, fmt.Errorf("watch %s: %w", conversation, err))
				return
			}
			meta, err := m.Metadata()
			if err != nil {
				yield(Record{}, fmt.Errorf("watch %s: %w", conversation, err))
				return
			}
			evs, err := decodeStep(conversation, meta.Sequence.Stream, m.Data())
			if err != nil {
				// Named; the caller may go on past it.
				if !yield(Record{Seq: meta.Sequence.Stream}, fmt.Errorf("watch %s: %w", conversation, err)) {
					return
				}
				continue
			}
			for _, e := range evs {
				pos++
				if !yield(Record{Seq: meta.Sequence.Stream, Pos: pos, MsgID: m.Headers().Get(jetstream.MsgIDHeader), Event: e}, nil) {
					return
				}
			}
		}
	}
}

// EventsAfter yields the conversation's events stored after the message at
// afterSeq, once, up to the end as the answering replica knows it: what
// Watch would yield so far. Positions count on from afterPos. It uses
// direct gets, which any replica answers, so it works while the stream
// elects a leader (a replica may lag the leader by the last few messages).
func (l *Log) EventsAfter(ctx context.Context, conversation string, afterSeq uint64, afterPos int) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := events.ValidateConversationID(conversation); err != nil {
			yield(Record{}, err)
			return
		}
		pos := afterPos
		for m, err := range l.messages(ctx, conversation, afterSeq+1) {
			if err != nil {
				yield(Record{}, err)
				return
			}
			for _, e := range m.events {
				pos++
				if !yield(Record{Seq: m.seq, Pos: pos, MsgID: m.msgID, Event: e}, nil) {
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
	names := l.Names()
	for k, stream := range l.shards {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(names.EventsShardWildcard(k)))
		if err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		for subj, n := range info.State.Subjects {
			out = append(out, Conversation{ID: names.ConversationOf(subj), Messages: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
