package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// Threads is the recording gateway's threading index, shared by every
// gateway of the installation and kept across restarts: a KV bucket
// (Names.ThreadsBucket) whose keys are hashes of calls' content and whose
// values are conversations and positions (see calls.Threads). Several
// gateways behind a load balancer, and import --calls, thread a
// conversation's calls alike whichever of them records each call. It
// implements calls.ThreadStore.
type Threads struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	prefix string
	stream string
}

// Threads opens the installation's threading bucket, creating it when it
// is missing (a worker's credential may).
func (l *Log) Threads(ctx context.Context) (*Threads, error) {
	kv, err := l.ensureBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      l.names.ThreadsBucket,
		Description: "turnlog gateway threading index: content hashes of recorded calls to their conversations",
		History:     1,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("open the gateway's threading index: %w", err)
	}
	return &Threads{js: l.js, kv: kv, prefix: "$KV." + l.names.ThreadsBucket + ".", stream: "KV_" + l.names.ThreadsBucket}, nil
}

// Get returns key's value; ok is false when it has none.
func (t *Threads) Get(ctx context.Context, key string) (string, bool, error) {
	e, err := t.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(e.Value()), true, nil
}

// GetMany returns the values of those keys that have one, read in one
// batched direct get (calls.BatchThreadStore); a server too old to answer
// one is asked key by key.
func (t *Threads) GetMany(ctx context.Context, keys []string) (map[string]string, error) {
	found := make(map[string]string)
	if len(keys) == 0 {
		return found, nil
	}
	subjects := make([]string, len(keys))
	for i, k := range keys {
		subjects[i] = t.prefix + k
	}
	msgs, err := jetstreamext.GetLastMsgsFor(ctx, t.js, t.stream, subjects)
	if err == nil {
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				break
			}
			if err != nil {
				return t.getEach(ctx, keys, err)
			}
			if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
				continue // erased
			}
			if k, ok := strings.CutPrefix(m.Subject, t.prefix); ok {
				found[k] = string(m.Data)
			}
		}
		return found, nil
	}
	return t.getEach(ctx, keys, err)
}

// getEach is GetMany key by key, after a batched get failed with err:
// only when the server cannot answer batched gets.
func (t *Threads) getEach(ctx context.Context, keys []string, err error) (map[string]string, error) {
	if !errors.Is(err, jetstreamext.ErrBatchUnsupported) {
		return nil, fmt.Errorf("read the threading index: %w", err)
	}
	found := make(map[string]string)
	for _, k := range keys {
		v, ok, err := t.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		if ok {
			found[k] = v
		}
	}
	return found, nil
}

// Put stores every pair, published together, and returns once JetStream
// acknowledged them all.
func (t *Threads) Put(ctx context.Context, pairs map[string]string) error {
	wait, err := t.PutAsync(pairs)
	if err != nil {
		return err
	}
	return wait(ctx)
}

// PutAsync publishes every pair and returns at once, with what waits
// until JetStream acknowledged them all: a caller overlaps the wait with
// its own append (calls.AsyncThreadStore).
func (t *Threads) PutAsync(pairs map[string]string) (wait func(context.Context) error, err error) {
	futures := make([]jetstream.PubAckFuture, 0, len(pairs))
	for k, v := range pairs {
		f, err := t.js.PublishAsync(t.prefix+k, []byte(v))
		if err != nil {
			return nil, err
		}
		futures = append(futures, f)
	}
	return func(ctx context.Context) error {
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}, nil
}
