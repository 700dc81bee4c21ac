package eventlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"
)

// The history cache.
//
// A conversation's messages are spread over the whole events stream, so a
// read of its whole history (replay, --verify, export, a load without a
// snapshot) costs one lookup per message even by its links (see chain.go),
// and after a server restart each lookup loads a block of the stream from
// disk: ~50 blocks of 8 MB for a 100-event conversation in a stream of a
// million messages. The history cache keeps a copy of each conversation's
// messages, as stored, in one value of the history bucket, so that such a
// read is one value and one lookup of the conversation's last message.
//
// Like snapshots it is a cache: rebuildable from the stream (a read that
// finds it missing or behind writes it), and never trusted without a check
// against the stream: its last message must be the stream's last message of
// the conversation, byte for byte, with the same sequence and step ID; its
// messages must link one to the next from the first (the links the server
// checked when it stored them, see chain.go); and its bytes must match the
// SHA-256 stored with them. A cache that is behind is used up to where it
// ends, the rest read from the stream; anything else is ignored and
// rewritten. Who can write the bucket can write what reads of whole
// histories show, as who can write the snapshots bucket can for loads:
// give that right only to the roles that write events.

// historyFormat is the cache record's format; a record of another format
// is ignored and rewritten. Format 2 keeps each message's subject (its
// writer's role, see writers.go).
const historyFormat = 2

// maxHistoryCache bounds the bytes of one conversation's cached messages:
// a longer history is read from the stream every time (and is, by then,
// a conversation with a snapshot for its loads).
const maxHistoryCache = 1 << 20

type historyRecord struct {
	Format       int              `msgpack:"format"`
	Conversation string           `msgpack:"conv"`
	Messages     []historyMessage `msgpack:"msgs"`
}

type historyMessage struct {
	Seq  uint64 `msgpack:"seq"`
	Prev uint64 `msgpack:"prev"`
	ID   string `msgpack:"id"`
	Subj string `msgpack:"subj"`
	W    string `msgpack:"w"`
	Data []byte `msgpack:"data"`
}

func historyBucketConfig(n Names) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      n.HistoryBucket,
		Description: "turnlog conversation histories (a cache, rebuildable from the events and checked against them)",
		History:     1,
		Storage:     jetstream.FileStorage,
	}
}

// cachedHistory returns the conversation's cached messages that a read may
// use: all of them up to last (the stream's last message of the
// conversation), or a prefix when the cache is behind. nil when there is
// no usable cache.
func (l *Log) cachedHistory(ctx context.Context, conversation string, last *stored) []*stored {
	if l.opts.noCaches {
		return nil
	}
	if l.history == nil {
		return nil
	}
	entry, err := l.history.Get(ctx, conversation)
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			l.opts.logger.Debug("history cache not read", "conversation", conversation, "err", err)
		}
		return nil
	}
	ignore := func(why string) []*stored {
		l.opts.logger.Debug("ignoring history cache: "+why, "conversation", conversation)
		return nil
	}
	v := entry.Value()
	if len(v) < sha256.Size {
		return ignore("too short")
	}
	if sum := sha256.Sum256(v[sha256.Size:]); !bytes.Equal(sum[:], v[:sha256.Size]) {
		return ignore("checksum mismatch")
	}
	var rec historyRecord
	if err := msgpack.Unmarshal(v[sha256.Size:], &rec); err != nil {
		return ignore("undecodable")
	}
	if rec.Format != historyFormat || rec.Conversation != conversation || len(rec.Messages) == 0 {
		return ignore("another format or conversation")
	}
	out := make([]*stored, len(rec.Messages))
	var prev uint64
	for i, m := range rec.Messages {
		if m.Prev != prev || m.Seq <= prev {
			return ignore("its messages do not link")
		}
		if !l.sameConversation(conversation, m.Subj) {
			return ignore("a message of another conversation")
		}
		out[i] = &stored{seq: m.Seq, prev: m.Prev, linked: true, msgID: m.ID, subject: m.Subj, writer: m.W, data: m.Data}
		prev = m.Seq
	}
	end := out[len(out)-1]
	switch {
	case end.seq > last.seq:
		return ignore("it ends past the stream's last message")
	case end.seq == last.seq && (end.msgID != last.msgID || end.subject != last.subject || end.writer != last.writer || !bytes.Equal(end.data, last.data)):
		return ignore("its last message is not the stream's")
	}
	return out
}

// cacheHistory writes msgs, the conversation's messages from its first,
// as its history cache, unless they are too many bytes. A failure (a role
// without the right to write the bucket) costs only the cache.
func (l *Log) cacheHistory(ctx context.Context, conversation string, msgs []*stored) {
	if l.history == nil || len(msgs) == 0 || l.opts.readOnly {
		return
	}
	rec := historyRecord{Format: historyFormat, Conversation: conversation, Messages: make([]historyMessage, len(msgs))}
	size := 0
	for i, m := range msgs {
		if size += len(m.data) + len(m.msgID) + 32; size > maxHistoryCache {
			return
		}
		rec.Messages[i] = historyMessage{Seq: m.seq, Prev: m.prev, ID: m.msgID, Subj: m.subject, W: m.writer, Data: m.data}
	}
	body, err := msgpack.Marshal(&rec)
	if err != nil {
		return
	}
	sum := sha256.Sum256(body)
	if _, err := l.history.Put(ctx, conversation, append(sum[:], body...)); err != nil {
		l.opts.logger.Debug("history cache not written", "conversation", conversation, "err", err)
	}
}

// dropHistory deletes the conversation's history cache, for Erase.
func (l *Log) dropHistory(ctx context.Context, conversation string) (bool, error) {
	if l.history == nil {
		return false, nil
	}
	if _, err := l.history.Get(ctx, conversation); errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := l.history.Purge(ctx, conversation); err != nil {
		return false, fmt.Errorf("history cache: %w", err)
	}
	return true, nil
}

// RefreshHistory brings the conversation's history cache up to date: it
// reads the whole history as Events does, from the cache and the stream,
// which writes the cache when it was missing or behind. Workers call it
// beside the requests when they let go of a conversation, so that reads
// of whole histories by the audit tools (which do not write) find it.
func (l *Log) RefreshHistory(ctx context.Context, conversation string) error {
	for _, err := range l.Events(ctx, conversation) {
		if err != nil {
			return fmt.Errorf("refresh history of %s: %w", conversation, err)
		}
	}
	return nil
}
