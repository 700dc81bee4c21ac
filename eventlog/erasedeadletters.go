package eventlog

// This file holds how an erasure reaches the dead letters: a dead letter
// keeps a request as it was sent, its text too, and every client key may
// read the dead-letters stream, for 30 days by default.

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"github.com/turnlog/turnlog/events"
)

// dropDeadLetters deletes the dead letters of requests sent to
// conversation and returns how many it deleted. Every dead letter is
// stored on one subject and names its request's subject in its body, so
// no subject-filtered purge can pick them out: the whole stream is read
// (within its limits, 100,000 records by default; an erasure is rare) and
// each of the conversation's records deleted by its sequence.
func (l *Log) dropDeadLetters(ctx context.Context, conversation string) (int, error) {
	s, err := l.deadLetterStream(ctx)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("dead letters: %w", err)
	}
	// Workers name a dead letter by the subject its request was published
	// on (ChatSubject), never by the requests stream's partition subject.
	subject := l.names.ChatSubject(conversation)
	// Up to where the stream's leader says it ends: a direct get may be
	// answered by a replica that has not stored the last records yet.
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("dead letters: %w", err)
	}
	last := info.State.LastSeq
	var seqs []uint64
	read := uint64(0)
	err = l.eachDeadLetter(ctx, jetstreamext.GetBatchSeq(1), last, func(d DeadLetter) bool {
		read = d.Seq
		if d.Subject == subject {
			seqs = append(seqs, d.Seq)
		}
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("dead letters: %w", err)
	}
	// What the replica that answered had not stored yet (a single server
	// has no replicas: it answered with all of it).
	for seq := max(read+1, info.State.FirstSeq); l.replicasMayLag() && seq <= last; seq++ {
		raw, err := l.MessageAt(ctx, s, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted, or dropped by the stream's limits
		}
		if err != nil {
			return 0, fmt.Errorf("dead letters: record %d: %w", seq, err)
		}
		if decodeDeadLetter(raw).Subject == subject {
			seqs = append(seqs, seq)
		}
	}
	n := 0
	for _, seq := range seqs {
		err := s.DeleteMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // dropped by the stream's limits meanwhile
		}
		if err != nil {
			return n, fmt.Errorf("dead letters: delete record %d: %w", seq, err)
		}
		n++
	}
	return n, nil
}

// ErrConversationErased is why AddDeadLetter refuses a dead letter: its
// request was sent to a conversation erased after the request was sent.
var ErrConversationErased = errors.New("the conversation was erased after the request was sent")

// deadLetterChecked runs between AddDeadLetter's check for an erasure and
// its storing the dead letter: tests erase there.
var deadLetterChecked = func() {}

// erasedDeadLetter reports whether d keeps a request sent to a
// conversation that was erased after the requests stream received it
// (d.Received): such a dead letter belongs to what was erased.
func (l *Log) erasedDeadLetter(ctx context.Context, d DeadLetter) (bool, error) {
	conv := l.names.ConversationOf(d.Subject)
	if d.Received.IsZero() || d.Subject != l.names.ChatSubject(conv) || events.ValidateConversationID(conv) != nil {
		return false, nil // no conversation to have been erased
	}
	return l.ErasedAfter(ctx, conv, d.Received)
}

// dropIfErased deletes the dead letter d just stored as record seq when
// its conversation was erased after its request was sent: an Erase whose
// note came before the record may have read the stream before it.
func (l *Log) dropIfErased(ctx context.Context, d DeadLetter, seq uint64) error {
	erased, err := l.erasedDeadLetter(ctx, d)
	if err != nil || !erased {
		return err
	}
	s, err := l.deadLetterStream(ctx)
	if err == nil {
		err = s.DeleteMsg(ctx, seq)
	}
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("delete record %d, stored after its conversation was erased: %w", seq, err)
	}
	return ErrConversationErased
}
