package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RequestIDTTL is how long the request IDs bucket remembers which
// conversation a client-chosen request ID was sent to.
const RequestIDTTL = 24 * time.Hour

func (l *Log) requestIDsConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      l.names.RequestIDsBucket,
		Description: "turnlog request IDs chosen by clients, and the conversation each was sent to",
		History:     1,
		TTL:         RequestIDTTL,
		Storage:     jetstream.FileStorage,
	}
}

// ClaimRequestID records that the client-chosen request ID id is sent to
// conversation, so that the same ID sent to another conversation within
// RequestIDTTL can be refused before it is queued: the worker could only
// fail it there (a request's events are stored under its ID, which must be
// unique across conversations). Claiming an ID again for the same
// conversation (a re-send) succeeds. The error for another conversation
// matches ErrCauseReused and does not name it. A generated ID is unique by
// construction and need not be claimed.
func (l *Log) ClaimRequestID(ctx context.Context, id, conversation string) error {
	if !validKey(id) {
		return fmt.Errorf("claim request ID %q: use letters and digits only (a ULID)", id)
	}
	kv, err := l.requestIDBucket(ctx)
	if err != nil {
		return fmt.Errorf("claim request ID %s: %w", id, err)
	}
	for range 2 {
		_, err := kv.Create(ctx, id, []byte(conversation))
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("claim request ID %s: %w", id, storageFull(err))
		}
		e, err := kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired in between: claim it afresh
		}
		if err != nil {
			return fmt.Errorf("claim request ID %s: %w", id, err)
		}
		if string(e.Value()) == conversation {
			return nil
		}
		if copied, err := l.copiedClaim(ctx, id); err != nil {
			return fmt.Errorf("claim request ID %s: %w", id, err)
		} else if copied {
			// Not a claim: replaced by this one, unless a real claim
			// came first (then it is read again).
			if _, err := kv.Update(ctx, id, []byte(conversation), e.Revision()); err == nil {
				return nil
			}
			continue
		}
		return fmt.Errorf("request_id %s: %w; send every request with a fresh request_id (or none, to have one generated)", id, ErrCauseReused)
	}
	return fmt.Errorf("claim request ID %s: it keeps expiring and reappearing; try again", id)
}

// ReleaseRequestID undoes ClaimRequestID(id, conversation) for a request
// that was refused after all: PublishRequest found the ID used by another
// conversation, which the bucket did not know of (it was sent over NATS,
// where nothing claims IDs). owner, that conversation when known, takes
// the claim, so that the ID sent to any other conversation is refused at
// once from now on; when owner is "" the claim is removed. A claim that
// names neither conversation is left as it is.
func (l *Log) ReleaseRequestID(ctx context.Context, id, conversation, owner string) error {
	kv, err := l.requestIDBucket(ctx)
	if err != nil {
		return fmt.Errorf("release request ID %s: %w", id, err)
	}
	e, err := kv.Get(ctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("release request ID %s: %w", id, err)
	case string(e.Value()) != conversation:
		return nil
	case owner != "":
		_, err = kv.Update(ctx, id, []byte(owner), e.Revision())
	default:
		err = kv.Delete(ctx, id, jetstream.LastRevision(e.Revision()))
	}
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) && !isWrongLastSequence(err) {
		// Either: the claim changed meanwhile, and the newer one stands.
		return fmt.Errorf("release request ID %s: %w", id, err)
	}
	return nil
}

// claimOf returns the conversation the request IDs bucket says id was sent
// to, "" when it has no claim of it (or there is no bucket).
func (l *Log) claimOf(ctx context.Context, id string) (string, error) {
	if !validKey(id) {
		return "", nil
	}
	kv, err := l.requestIDBucket(ctx)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	e, err := kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("bucket %s: %w", l.names.RequestIDsBucket, err)
	}
	if copied, err := l.copiedClaim(ctx, id); err != nil || copied {
		return "", err
	}
	return string(e.Value()), nil
}

// copiedClaim reports whether the request IDs bucket's value for id is a
// stored copy of a direct get's answer (a worker key can have the server
// store one under any key, by naming the key as a reply subject), not a
// claim (StoredCopy: it carries the server's headers, which turnlog's
// claims never do). It is logged, as the copy is someone's doing.
func (l *Log) copiedClaim(ctx context.Context, id string) (bool, error) {
	stream := "KV_" + l.names.RequestIDsBucket
	m, err := l.leaderGet(ctx, stream, leaderGetRequest{LastFor: "$KV." + l.names.RequestIDsBucket + "." + id})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the claim of request ID %s: %w", id, err)
	}
	if !StoredCopy(m.Header) {
		return false, nil
	}
	l.opts.logger.Warn("a request ID's claim is a copy of another stored message (a JetStream answer a client with the worker or admin key had stored there), not a claim: ignored",
		"request_id", id, "seq", m.Sequence)
	return true, nil
}

// requestIDBucket is the request IDs bucket, looked up on first use by a
// log from Attach.
func (l *Log) requestIDBucket(ctx context.Context) (jetstream.KeyValue, error) {
	return firstUse(l, &l.requestIDs, func() (jetstream.KeyValue, error) {
		kv, err := l.js.KeyValue(ctx, l.names.RequestIDsBucket)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", l.names.RequestIDsBucket, err)
		}
		return kv, nil
	})
}

func validKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
