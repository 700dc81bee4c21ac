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
	var seqs []uint64
	err = l.eachDeadLetter(ctx, jetstreamext.GetBatchSeq(1), 0, func(d DeadLetter) bool {
		if d.Subject == subject {
			seqs = append(seqs, d.Seq)
		}
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("dead letters: %w", err)
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
