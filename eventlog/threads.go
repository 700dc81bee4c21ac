package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
	kv, err := l.ensureBucket(ctx, threadsBucketConfig(l.names))
	if err != nil {
		return nil, fmt.Errorf("open the gateway's threading index: %w", err)
	}
	return &Threads{js: l.js, kv: kv, prefix: "$KV." + l.names.ThreadsBucket + ".", stream: "KV_" + l.names.ThreadsBucket}, nil
}

func threadsBucketConfig(n Names) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      n.ThreadsBucket,
		Description: "turnlog gateway threading index: content hashes of recorded calls to their conversations",
		History:     1,
		Storage:     jetstream.FileStorage,
	}
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
// batched direct get (calls.BatchThreadStore): one request, answered by
// a message per key found and an end-of-batch one. The answers are
// received on a channel sized for them (a plain synchronous subscription
// allocates 512 KB for its queue, per lookup).
func (t *Threads) GetMany(ctx context.Context, keys []string) (map[string]string, error) {
	found := make(map[string]string)
	if len(keys) == 0 {
		return found, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.js.Options().DefaultTimeout)
		defer cancel()
	}
	var req struct {
		Subjects []string `json:"multi_last"`
	}
	for _, k := range keys {
		req.Subjects = append(req.Subjects, t.prefix+k)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	subj := t.js.Options().APIPrefix
	if subj == "" {
		subj = jetstream.DefaultAPIPrefix
	}
	subj += "DIRECT.GET." + t.stream
	nc := t.js.Conn()
	inbox := nc.NewInbox() // not under the request mux's wildcard: delivered once
	answers := make(chan *nats.Msg, len(keys)+2)
	sub, err := nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil, fmt.Errorf("read the threading index: %w", err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subj, inbox, body); err != nil {
		return nil, fmt.Errorf("read the threading index: %w", err)
	}
	for {
		var m *nats.Msg
		select {
		case m = <-answers:
		case <-ctx.Done():
			return nil, fmt.Errorf("read the threading index: %w", ctx.Err())
		}
		if len(m.Data) == 0 {
			switch status := m.Header.Get("Status"); status {
			case "":
			case "204": // end of the batch
				return found, nil
			case "404": // none of the keys
				return found, nil
			case "408", "503":
				// 408: a server older than batched gets (nats-server
				// 2.11) finds no request it knows in this one. 503: a
				// bucket that does not allow direct gets; Get reads it
				// another way.
				return t.getEach(ctx, keys)
			default:
				return nil, fmt.Errorf("read the threading index: batched get answered %s %s", status, m.Header.Get("Description"))
			}
		}
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			continue // erased
		}
		if k, ok := strings.CutPrefix(m.Header.Get(jetstream.SubjectHeader), t.prefix); ok {
			found[k] = string(m.Data)
		}
	}
}

// Swap sets key to new while it holds old (by the entry's revision), and
// reports whether it did (calls.SwapThreadStore).
func (t *Threads) Swap(ctx context.Context, key, old, new string) (bool, error) {
	e, err := t.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if string(e.Value()) != old {
		return false, nil
	}
	_, err = t.kv.Update(ctx, key, []byte(new), e.Revision())
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil // changed meanwhile
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return false, nil
	}
	return err == nil, err
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
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, putAckTimeout)
			defer cancel()
		}
		// A write the server refused closes a command's connection (its
		// error handler does, to report the refusal at once), and a
		// closed connection never acknowledges: stop waiting then.
		nc := t.js.Conn()
		closed := nc.StatusChanged(nats.CLOSED)
		defer nc.RemoveStatusListener(closed)
		for _, f := range futures {
			if nc.IsClosed() {
				return fmt.Errorf("write to the threading index (%s): %w", t.prefix+"…", nats.ErrConnectionClosed)
			}
			select {
			case <-f.Ok():
			case <-closed:
				return fmt.Errorf("write to the threading index (%s): %w", t.prefix+"…", nats.ErrConnectionClosed)
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return fmt.Errorf("no acknowledgement from JetStream of a write to the threading index (%s) in time: the server refused it (this NATS credential may not write there: erase needs the admin's) or is not answering", t.prefix+"…")
				}
				return ctx.Err()
			}
		}
		return nil
	}, nil
}

// putAckTimeout bounds the wait for JetStream's acknowledgement of a write
// to the index when the caller set no deadline: a write the server
// refused (a credential that may not write the index) is never
// acknowledged, and a command would wait for ever.
const putAckTimeout = 10 * time.Second

// getEach is GetMany key by key.
func (t *Threads) getEach(ctx context.Context, keys []string) (map[string]string, error) {
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
