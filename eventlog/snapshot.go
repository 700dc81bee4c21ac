package eventlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/vmihailenco/msgpack/v5"
)

// Snapshot formats. Snapshots of an unknown format are ignored and rebuilt,
// never migrated: they are a cache.
const (
	// snapshotFormat: the record holds the Turn itself.
	snapshotFormat = 1
	// snapshotRefFormat: the Turn was too large for one message; the
	// record names an object of the snapshot objects bucket that holds
	// the encoded snapshotFormat record, with its size and SHA-256.
	snapshotRefFormat = 2
)

// snapshotObjectReadTimeout bounds the read of a large snapshot: a read
// whose object is replaced by a concurrent save midway would otherwise
// wait for chunks that were purged.
const snapshotObjectReadTimeout = 30 * time.Second

// snapshotRecord is what the snapshots bucket holds per conversation,
// behind a SHA-256 of the encoded record.
type snapshotRecord struct {
	Format int             `msgpack:"format"`
	LastID string          `msgpack:"last_id"` // message ID at Turn.Seq
	Turn   *projector.Turn `msgpack:"turn,omitempty"`
	// Object, Size and SHA256 describe the object of a snapshotRefFormat
	// record.
	Object string `msgpack:"object,omitempty"`
	Size   int64  `msgpack:"size,omitempty"`
	SHA256 []byte `msgpack:"sha256,omitempty"`
}

// SaveSnapshot stores turn as the conversation's latest snapshot. lastMsgID
// is the ID of the message at turn.Seq, which Load checks to detect a
// snapshot that outlived its log. A snapshot that fits in one message is
// the bucket's value; a larger one is stored as an object of the snapshot
// objects bucket (which the client chunks) and the value only refers to it.
func (l *Log) SaveSnapshot(ctx context.Context, turn *projector.Turn, lastMsgID string) error {
	if turn.Seq == 0 || lastMsgID == "" {
		return errors.New("save snapshot: the turn has no log position")
	}
	if err := l.ensureHandles(ctx); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	conv := turn.Conversation
	body, err := msgpack.Marshal(&snapshotRecord{Format: snapshotFormat, LastID: lastMsgID, Turn: turn})
	if err != nil {
		return fmt.Errorf("save snapshot of %s: %w", conv, err)
	}
	sum := sha256.Sum256(body)
	if int64(sha256.Size+len(body)) > l.maxSnapshotValue() {
		return l.saveSnapshotObject(ctx, conv, lastMsgID, body, sum)
	}
	if _, err := l.snaps.Put(ctx, conv, append(sum[:], body...)); err != nil {
		return fmt.Errorf("save snapshot of %s: %w", conv, err)
	}
	// After the put, so that no reference to the object is left behind.
	if _, err := l.deleteSnapshotObject(ctx, conv); err != nil {
		return fmt.Errorf("save snapshot of %s: previous large snapshot: %w", conv, err)
	}
	return nil
}

// maxSnapshotValue is the largest value the snapshots bucket takes: the
// server's max payload less room for the headers.
func (l *Log) maxSnapshotValue() int64 { return l.nc.MaxPayload() - 1024 }

// saveSnapshotObject stores body, an encoded snapshotFormat record with
// SHA-256 sum, as the conversation's object, then points the
// conversation's value at it. The object comes first: a value never refers
// to an object not yet written.
func (l *Log) saveSnapshotObject(ctx context.Context, conv, lastMsgID string, body []byte, sum [sha256.Size]byte) error {
	chunk := min(1<<20, l.nc.MaxPayload()/2)
	meta := jetstream.ObjectMeta{
		Name:        conv,
		Description: "turnlog snapshot of " + conv,
		Opts:        &jetstream.ObjectMetaOptions{ChunkSize: uint32(chunk)},
	}
	if _, err := l.bigSnaps.Put(ctx, meta, bytes.NewReader(body)); err != nil {
		return fmt.Errorf("save snapshot of %s: object: %w", conv, err)
	}
	ref, err := msgpack.Marshal(&snapshotRecord{
		Format: snapshotRefFormat, LastID: lastMsgID,
		Object: conv, Size: int64(len(body)), SHA256: sum[:],
	})
	if err != nil {
		return fmt.Errorf("save snapshot of %s: %w", conv, err)
	}
	refSum := sha256.Sum256(ref)
	if _, err := l.snaps.Put(ctx, conv, append(refSum[:], ref...)); err != nil {
		return fmt.Errorf("save snapshot of %s: %w", conv, err)
	}
	return nil
}

// deleteSnapshotObject deletes the conversation's large snapshot, if it has
// one, and says whether it had.
func (l *Log) deleteSnapshotObject(ctx context.Context, conv string) (bool, error) {
	// GetInfo first: Delete on an object deleted earlier would write a new
	// delete marker every time.
	if _, err := l.bigSnaps.GetInfo(ctx, conv); errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := l.bigSnaps.Delete(ctx, conv); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, err
	}
	return true, nil
}

// snapshot returns the conversation's snapshot and the ID of its last
// message, or nil when there is none or it cannot be trusted (bad checksum,
// undecodable, another format or conversation, a missing or altered
// object). Either way the log is still complete, so problems are logged,
// not returned.
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
	if rec.Format == snapshotRefFormat {
		ref := rec
		if rec = l.snapshotObject(ctx, conversation, ref); rec.Turn == nil {
			return nil, "" // reported by snapshotObject
		}
		if rec.LastID != ref.LastID {
			l.opts.logger.Warn("ignoring large snapshot: its object ends at another message", "conversation", conversation, "object", ref.Object)
			return nil, ""
		}
	}
	if rec.Format != snapshotFormat || rec.Turn == nil || rec.Turn.Conversation != conversation || rec.Turn.Seq == 0 {
		l.opts.logger.Warn("ignoring snapshot of another format or conversation", "conversation", conversation)
		return nil, ""
	}
	return rec.Turn, rec.LastID
}

// snapshotObject reads and decodes the object a snapshotRefFormat record
// names. It returns a zero record when the object is missing or is not
// the one the reference describes.
//
// The object's size and digest are checked against the reference before
// its chunks are read, and the bytes read against that digest (a SHA-256),
// so the bytes decoded are the ones the reference was written for.
func (l *Log) snapshotObject(ctx context.Context, conversation string, ref snapshotRecord) snapshotRecord {
	warn := func(msg string, args ...any) snapshotRecord {
		l.opts.logger.Warn("ignoring large snapshot: "+msg, append([]any{"conversation", conversation, "object", ref.Object}, args...)...)
		return snapshotRecord{}
	}
	if ref.Object == "" || ref.Size <= 0 || len(ref.SHA256) != sha256.Size {
		return warn("malformed reference")
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotObjectReadTimeout)
	defer cancel()
	// The description first, so that no chunk of an object that cannot
	// be the one referred to is sent.
	info, err := l.bigSnaps.GetInfo(ctx, ref.Object)
	if err != nil {
		return warn("object not read", "err", err)
	}
	if info.Size != uint64(ref.Size) {
		return warn("size mismatch", "size", info.Size, "want", ref.Size)
	}
	digest, err := jetstream.DecodeObjectDigest(info.Digest)
	if err != nil || !bytes.Equal(digest, ref.SHA256) {
		return warn("checksum mismatch")
	}
	body, err := l.objectChunks(ctx, info, int(ref.Size))
	if err != nil {
		return warn("object not read", "err", err)
	}
	if int64(len(body)) != ref.Size {
		return warn("size mismatch", "size", len(body), "want", ref.Size)
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], ref.SHA256) {
		return warn("object replaced while read")
	}
	var rec snapshotRecord
	if err := msgpack.Unmarshal(body, &rec); err != nil {
		return warn("undecodable", "err", err)
	}
	if rec.Format != snapshotFormat || rec.Turn == nil || rec.Turn.Conversation != conversation {
		return warn("another format or conversation")
	}
	return rec
}

// SnapshotAt says where the conversation's snapshot ends: the sequence of
// its last message and how many events it holds; 0 and 0 when it has none
// (or none a load would use). It is how an operator, or a test, sees that
// a load will start from the snapshot rather than from the log.
func (l *Log) SnapshotAt(ctx context.Context, conversation string) (seq uint64, n int, err error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return 0, 0, fmt.Errorf("snapshot of %q: %w", conversation, err)
	}
	if err := l.ensureHandles(ctx); err != nil {
		return 0, 0, fmt.Errorf("snapshot of %s: %w", conversation, err)
	}
	turn, _ := l.snapshot(ctx, conversation)
	if turn == nil {
		return 0, 0, nil
	}
	return turn.Seq, turn.Events, nil
}

// objectChunks reads the chunks of the object info describes with batched
// direct gets, in order, up to size bytes. The object store's own Get
// reads them through a push consumer, which the roles that read snapshots
// may not create (see natsauth: a push consumer delivers to any subject).
func (l *Log) objectChunks(ctx context.Context, info *jetstream.ObjectInfo, size int) ([]byte, error) {
	stream := "OBJ_" + l.names.SnapshotObjectsBucket
	subject := "$O." + l.names.SnapshotObjectsBucket + ".C." + info.NUID
	body := make([]byte, 0, size)
	next, chunks := uint64(1), 0
	for chunks < int(info.Chunks) {
		batch, err := jetstreamext.GetBatch(ctx, l.js, stream, readBatch,
			jetstreamext.GetBatchSeq(next), jetstreamext.GetBatchSubject(subject))
		if err != nil {
			return nil, err
		}
		got := 0
		for raw, err := range batch {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				break
			}
			if err != nil {
				return nil, err
			}
			got++
			chunks++
			next = raw.Sequence + 1
			if len(body)+len(raw.Data) > size {
				return nil, fmt.Errorf("chunks hold more than the %d bytes described", size)
			}
			body = append(body, raw.Data...)
		}
		if got == 0 {
			return nil, fmt.Errorf("%d of %d chunks found", chunks, info.Chunks)
		}
	}
	return body, nil
}
