package eventlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/projector"
	"github.com/vmihailenco/msgpack/v5"
)

// snapshotFormat is bumped when the snapshot layout changes; snapshots of
// another format are ignored and rebuilt, never migrated: they are a cache.
const snapshotFormat = 1

// snapshotRecord is what the snapshots bucket holds per conversation,
// behind a SHA-256 of the encoded record.
type snapshotRecord struct {
	Format int             `msgpack:"format"`
	LastID string          `msgpack:"last_id"` // message ID at Turn.Seq
	Turn   *projector.Turn `msgpack:"turn"`
}

// SaveSnapshot stores turn as the conversation's latest snapshot. lastMsgID
// is the ID of the message at turn.Seq, which Load checks to detect a
// snapshot that outlived its log. A turn too large for one message is not
// snapshotted; loads then read the whole log.
func (l *Log) SaveSnapshot(ctx context.Context, turn *projector.Turn, lastMsgID string) error {
	if turn.Seq == 0 || lastMsgID == "" {
		return errors.New("save snapshot: the turn has no log position")
	}
	body, err := msgpack.Marshal(&snapshotRecord{Format: snapshotFormat, LastID: lastMsgID, Turn: turn})
	if err != nil {
		return fmt.Errorf("save snapshot of %s: %w", turn.Conversation, err)
	}
	sum := sha256.Sum256(body)
	value := append(sum[:], body...)
	if int64(len(value)) > l.nc.MaxPayload()-1024 {
		return fmt.Errorf("save snapshot of %s: %w: %d bytes", turn.Conversation, ErrTooLarge, len(value))
	}
	if _, err := l.snaps.Put(ctx, turn.Conversation, value); err != nil {
		return fmt.Errorf("save snapshot of %s: %w", turn.Conversation, err)
	}
	return nil
}

// snapshot returns the conversation's snapshot and the ID of its last
// message, or nil when there is none or it cannot be trusted (bad checksum,
// undecodable, another format or conversation). Either way the log is
// still complete, so problems are logged, not returned.
func (l *Log) snapshot(ctx context.Context, conversation string) (*projector.Turn, string) {
	entry, err := l.snaps.Get(ctx, conversation)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ""
	}
	if err != nil {
		l.opts.logger.Warn("snapshot not read; loading from the log", "conversation", conversation, "err", err)
		return nil, ""
	}
	v := entry.Value()
	if len(v) < sha256.Size {
		l.opts.logger.Warn("ignoring corrupt snapshot: too short", "conversation", conversation)
		return nil, ""
	}
	sum := sha256.Sum256(v[sha256.Size:])
	if !bytes.Equal(sum[:], v[:sha256.Size]) {
		l.opts.logger.Warn("ignoring corrupt snapshot: checksum mismatch", "conversation", conversation)
		return nil, ""
	}
	var rec snapshotRecord
	if err := msgpack.Unmarshal(v[sha256.Size:], &rec); err != nil {
		l.opts.logger.Warn("ignoring corrupt snapshot", "conversation", conversation, "err", err)
		return nil, ""
	}
	if rec.Format != snapshotFormat || rec.Turn == nil || rec.Turn.Conversation != conversation || rec.Turn.Seq == 0 {
		l.opts.logger.Warn("ignoring snapshot of another format or conversation", "conversation", conversation)
		return nil, ""
	}
	return rec.Turn, rec.LastID
}
