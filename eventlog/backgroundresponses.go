package eventlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BackgroundKeep is how long an entry of the background responses bucket
// lives (the bucket's MaxAge): past the 24 hours a gateway asks about a
// response, with room for the clocks of a cluster. An entry no gateway
// removed (all stopped, none came back) goes by itself.
const BackgroundKeep = 26 * time.Hour

// BackgroundResponses is the installation's list of the background
// responses (OpenAI's background: true) that recording gateways ask the
// provider about, because their app learns of the end elsewhere (a
// webhook) and never fetches it through a gateway. A gateway keeps its
// list in memory; kept here too, the list outlives the gateway: one that
// restarts, or another gateway of the installation, goes on asking about
// the responses a stopped gateway followed, and the calls they end are
// not left open for ever. It is a KV bucket (Names.BackgroundBucket),
// read by batched direct gets (a worker's credential creates no
// consumer) and small: an entry goes when its response's end is recorded,
// and after BackgroundKeep in any case.
type BackgroundResponses struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	stream string
}

// BackgroundResponse is one entry: which response, of which conversation,
// asked for how (the call's include list and the organization and project
// headers it named: no credential), since when, and which gateway process
// asks about it.
type BackgroundResponse struct {
	Conversation string              `json:"conversation"`
	ResponseID   string              `json:"response_id"`
	Include      []string            `json:"include,omitempty"`
	Account      map[string][]string `json:"account,omitempty"`
	Since        time.Time           `json:"since"`
	Instance     string              `json:"instance"`
}

// BackgroundResponses opens the installation's background responses
// bucket, creating it when it is missing (a worker's credential may).
func (l *Log) BackgroundResponses(ctx context.Context) (*BackgroundResponses, error) {
	kv, err := l.ensureBucket(ctx, backgroundBucketConfig(l.names))
	if err != nil {
		return nil, fmt.Errorf("open the gateway's background responses: %w", err)
	}
	return &BackgroundResponses{js: l.js, kv: kv, stream: "KV_" + l.names.BackgroundBucket}, nil
}

func backgroundBucketConfig(n Names) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      n.BackgroundBucket,
		Description: "turnlog gateway: background responses whose end the gateways ask the provider for",
		History:     1,
		TTL:         BackgroundKeep,
		Storage:     jetstream.FileStorage,
	}
}

// backgroundKey is an entry's key: a hash of its conversation and
// response, which may hold what a key cannot.
func backgroundKey(conv, id string) string {
	sum := sha256.Sum256([]byte(conv + "\x00" + id))
	return hex.EncodeToString(sum[:])
}

// Put stores r, in place of any entry of the same response.
func (b *BackgroundResponses) Put(ctx context.Context, r BackgroundResponse) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := b.kv.Put(ctx, backgroundKey(r.Conversation, r.ResponseID), v); err != nil {
		return fmt.Errorf("keep background response %s: %w", r.ResponseID, err)
	}
	return nil
}

// Delete removes the entry of response id of conversation conv (purged:
// no value stays in the bucket's history); none is not an error.
func (b *BackgroundResponses) Delete(ctx context.Context, conv, id string) error {
	if err := b.kv.Purge(ctx, backgroundKey(conv, id)); err != nil {
		return fmt.Errorf("drop background response %s: %w", id, err)
	}
	return nil
}

// Each calls fn with every entry, until fn returns false. An entry that
// cannot be read (another client wrote the key) comes with its error and
// its key as its ResponseID, and the reading goes on.
func (b *BackgroundResponses) Each(ctx context.Context, fn func(BackgroundResponse, error) bool) error {
	found, err := latestEntries(ctx, b.js, b.stream)
	if err != nil {
		return fmt.Errorf("read the gateway's background responses: %w", err)
	}
	for _, raw := range found {
		if deleted(raw) {
			continue
		}
		key := strings.TrimPrefix(raw.Subject, "$KV."+strings.TrimPrefix(b.stream, "KV_")+".")
		var r BackgroundResponse
		err := json.Unmarshal(raw.Data, &r)
		if err == nil && (r.Conversation == "" || r.ResponseID == "" || backgroundKey(r.Conversation, r.ResponseID) != key) {
			err = errors.New("not an entry a gateway wrote")
		}
		if err != nil {
			r = BackgroundResponse{ResponseID: key}
			err = fmt.Errorf("background response entry %s: %w", key, err)
		}
		if !fn(r, err) {
			return nil
		}
	}
	return nil
}
