package benchmark

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/projector"
	"github.com/vmihailenco/msgpack/v5"
)

// bytes: storage for a 200-exchange conversation as events, against storing
// the whole Turn after every exchange (the snapshot-per-step design), each
// in a stream of its own on the same server; and the events' bytes in the
// stream's files, with S2 compression and without.
func (r *runner) bytes(ctx context.Context, _ *eventlog.Log) error {
	r.say("bytes: 200 exchanges as events (compressed and not) and as a Turn snapshot per exchange")
	plain, err := eventlog.Open(ctx, r.nc, eventlog.WithPrefix("benchbytes"))
	if err != nil {
		return err
	}
	packed, err := eventlog.Open(ctx, r.nc, eventlog.WithPrefix("benchbytesz"), eventlog.WithCompression(jetstream.S2Compression))
	if err != nil {
		return err
	}
	js := plain.JetStream()
	snaps, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BENCHBYTES_TURNS", Subjects: []string{"benchbytes.turns.>"}})
	if err != nil {
		return err
	}
	turn := projector.New("c200")
	var packedSeq uint64
	for i := 0; i < 200; i++ {
		for _, step := range exchange(turn, "c200", i, 0) {
			if err := projector.ApplyAll(turn, step); err != nil {
				return err
			}
			if turn.Seq, err = plain.Append(ctx, "c200", turn.Seq, step...); err != nil {
				return err
			}
			if packedSeq, err = packed.Append(ctx, "c200", packedSeq, step...); err != nil {
				return err
			}
		}
		whole, err := msgpack.Marshal(turn)
		if err != nil {
			return err
		}
		if _, err := js.Publish(ctx, "benchbytes.turns.c200", whole); err != nil {
			return err
		}
	}
	ev, err := js.Stream(ctx, plain.Names().EventsStream)
	if err != nil {
		return err
	}
	evInfo, err := ev.Info(ctx)
	if err != nil {
		return err
	}
	snInfo, err := snaps.Info(ctx)
	if err != nil {
		return err
	}
	r.res.BytesEvents200 = int64(evInfo.State.Bytes)
	r.res.BytesSnapshots200 = int64(snInfo.State.Bytes)
	if r.res.BytesEvents200Disk, err = r.sealedBlockBytes(ctx, packed); err != nil {
		return err
	}
	r.res.BytesEvents200DiskUncompressed, err = r.sealedBlockBytes(ctx, plain)
	return err
}

// sealedBlockBytes is the size of the events stream's first message block
// file once the block is full: JetStream compresses a block (when the
// stream asks for it) as it starts the next one, so one message too large
// for the rest of the block is published to another subject to seal it;
// the compression, which runs in the background, is waited for.
func (r *runner) sealedBlockBytes(ctx context.Context, l *eventlog.Log) (int64, error) {
	js := l.JetStream()
	seal := make([]byte, int(r.nc.MaxPayload())-4096)
	if _, err := js.Publish(ctx, l.Names().EventsSubject("seal"), seal); err != nil {
		return 0, fmt.Errorf("seal the block: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(r.dir, "jetstream", "*", "streams", l.Names().EventsStream, "msgs", "1.blk"))
	if err != nil || len(files) != 1 {
		return 0, fmt.Errorf("the events stream's first block in %s: found %d (%v)", r.dir, len(files), err)
	}
	// The size settles once the block is rewritten compressed.
	var last int64 = -1
	for stable := 0; stable < 5; {
		fi, err := os.Stat(files[0])
		if err != nil {
			return 0, err
		}
		if fi.Size() == last {
			stable++
		} else {
			stable, last = 0, fi.Size()
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return last, nil
}
