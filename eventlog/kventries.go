package eventlog

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// latestEntries reads a small KV bucket's stream (stream, "KV_<bucket>")
// by batched direct gets, which a worker's credential may make where it
// may create no consumer, and returns each key's latest message in the
// order the keys were first written; deletions and purges come as their
// markers (KV-Operation), for the caller to skip.
func latestEntries(ctx context.Context, js jetstream.JetStream, stream string) ([]*jetstream.RawStreamMsg, error) {
	latest := map[string]int{} // subject to its place in found
	var found []*jetstream.RawStreamMsg
	start := jetstreamext.GetBatchSeq(1)
	for {
		batch, err := jetstreamext.GetBatch(ctx, js, stream, readBatch, start)
		if err != nil {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				return found, nil
			}
			return nil, err
		}
		got, next := 0, uint64(0)
		for raw, err := range batch {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				break
			}
			if err != nil {
				return nil, err
			}
			raw = fromServer(raw)
			got++
			next = max(next, raw.Sequence+1)
			if i, ok := latest[raw.Subject]; ok {
				found[i] = raw
				continue
			}
			latest[raw.Subject] = len(found)
			found = append(found, raw)
		}
		if got == 0 {
			return found, nil
		}
		start = jetstreamext.GetBatchSeq(next)
	}
}

// deleted reports whether a bucket's latest message for its key is a
// deletion or a purge.
func deleted(raw *jetstream.RawStreamMsg) bool {
	op := raw.Header.Get("KV-Operation")
	return op == "DEL" || op == "PURGE"
}
