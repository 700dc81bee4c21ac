package eventlog

import (
	"context"
	"crypto/sha256"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// NeedsUpdate and WantedStreams let the external tests check Open's
// upgrade rule (natstest imports eventlog, so they cannot be internal).
var NeedsUpdate = needsUpdate

func (l *Log) WantedStreams() []jetstream.StreamConfig {
	return []jetstream.StreamConfig{l.requestsConfig(), l.deadLettersConfig()}
}

// SetDeadLetterChecked makes AddDeadLetter call fn after it checked for an
// erasure and before it stores the dead letter, and returns the function
// that restores it.
func SetDeadLetterChecked(fn func()) (restore func()) {
	old := deadLetterChecked
	deadLetterChecked = fn
	return func() { deadLetterChecked = old }
}

// SetMaxBatchScan sets how far apart a conversation's last message and the
// base of a read must be for the read to follow links, and returns the
// function that restores it.
func SetMaxBatchScan(n uint64) (restore func()) {
	old := maxBatchScan
	maxBatchScan = n
	return func() { maxBatchScan = old }
}

// AlterHistoryCache changes a history cache value as a writer of the
// bucket could, its checksum made again: "last" changes a byte of the last
// message, "drop" drops the second message, "writer" says the admin wrote
// every message but the last.
func AlterHistoryCache(t require.TestingT, v []byte, how string) []byte {
	var rec historyRecord
	require.NoError(t, msgpack.Unmarshal(v[sha256.Size:], &rec))
	switch how {
	case "last":
		d := rec.Messages[len(rec.Messages)-1].Data
		d[len(d)-1] ^= 1
	case "writer":
		for i := range rec.Messages[:len(rec.Messages)-1] {
			rec.Messages[i].W = "admin"
		}
	case "drop":
		rec.Messages = append(rec.Messages[:1], rec.Messages[2:]...)
	}
	body, err := msgpack.Marshal(&rec)
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	return append(sum[:], body...)
}

// ReadThrough reads conversation's messages as a read that began when its
// last message was until does, and returns how many steps it yielded.
func (l *Log) ReadThrough(ctx context.Context, conversation string, until uint64) (int, error) {
	n := 0
	for _, err := range l.messages(ctx, conversation, 0, until) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
