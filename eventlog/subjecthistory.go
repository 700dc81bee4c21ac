package eventlog

import (
	"context"
	"errors"
	"iter"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SubjectHistory yields the messages stored on subject in stream with a
// sequence below before (0: all of them), oldest first, as the stream's
// leader holds them (STREAM.MSG.GET, which every role may send on the
// buckets it reads). It exists for a reader whose latest value on a key
// is a stored copy (see StoredCopy): a client that named the key as the
// reply subject of a JetStream request had the server's answer stored
// there, and the value before it is still in the key's history when the
// bucket keeps one. Each message is read with its server's headers
// (Nats-Stream, Nats-Subject, Nats-Sequence), as a direct get's are, so
// StoredCopy tells copies from values. One round trip per message.
func (l *Log) SubjectHistory(ctx context.Context, stream, subject string, before uint64) iter.Seq2[*jetstream.RawStreamMsg, error] {
	return func(yield func(*jetstream.RawStreamMsg, error) bool) {
		for next := uint64(1); before == 0 || next < before; {
			m, err := l.leaderGet(ctx, stream, leaderGetRequest{Seq: next, NextFor: subject})
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if before != 0 && m.Sequence >= before {
				return
			}
			if !yield(m, nil) {
				return
			}
			next = m.Sequence + 1
		}
	}
}

// StoredSequence is the sequence the stream stored a message at, read
// from the headers a direct get answers with: a stored copy carries the
// copied message's Nats-Sequence first and its own last. ok is false
// when the headers hold none.
func StoredSequence(h nats.Header) (seq uint64, ok bool) {
	n, err := strconv.ParseUint(serverValue(h, jetstream.SequenceHeader), 10, 64)
	return n, err == nil
}
