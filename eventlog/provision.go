package eventlog

// This file holds how Open creates or upgrades the log's streams, buckets
// and object store.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// notYetForReaders reports whether err is a stream or bucket that a
// read-only log found missing and may do without until first use.
func (l *Log) notYetForReaders(err error) bool {
	return l.opts.readOnly && errors.Is(err, errNotProvisioned)
}

func (l *Log) provision(ctx context.Context) error {
	if err := l.provisionEvents(ctx); err != nil {
		return err
	}
	reqs, err := l.ensureStream(ctx, l.requestsConfig())
	if err != nil {
		return err
	}
	// A read-only client of an installation from before dead letters and
	// claimed request IDs existed goes on without them: they are looked
	// up on first use (by then a worker or an admin has made them).
	if l.deadLetters, err = l.ensureStream(ctx, l.deadLettersConfig()); err != nil && !l.notYetForReaders(err) {
		return err
	}
	l.requests = reqs
	l.partitions = partitionsOf(reqs.CachedInfo().Config.SubjectTransform)
	if l.snaps, err = l.ensureBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      l.names.SnapshotsBucket,
		Description: "turnlog projection snapshots (a cache, rebuildable from the events)",
		History:     1,
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return err
	}
	if l.requestIDs, err = l.ensureBucket(ctx, l.requestIDsConfig()); err != nil && !l.notYetForReaders(err) {
		return err
	}
	if l.bigSnaps, err = l.ensureObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      l.names.SnapshotObjectsBucket,
		Description: "turnlog projection snapshots too large for one message (a cache, rebuildable from the events)",
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return err
	}
	if _, err = l.ensureBucket(ctx, jetstream.KeyValueConfig{
		Bucket:      l.names.TemplatesBucket,
		Description: "turnlog system prompt templates",
		History:     16,
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return err
	}
	if err := l.refuseRollups(ctx, "KV_"+l.names.TemplatesBucket); err != nil {
		return err
	}
	// The history cache is optional: a read-only log on an installation
	// that has none reads the events themselves.
	l.history, err = l.ensureBucket(ctx, historyBucketConfig(l.names))
	if errors.Is(err, errNotProvisioned) {
		l.history, err = nil, nil
	}
	if err != nil || l.opts.readOnly {
		return err
	}
	// The gateway's threading index with the rest, not on first use: a
	// bucket left to be made later could be made first by a worker key,
	// with subjects of its choosing (see checkBucketSubjects).
	_, err = l.ensureBucket(ctx, threadsBucketConfig(l.names))
	return err
}

// ensureStream creates a stream, or updates it only where this Open asked
// for something else: replicas and partitions stay as they are unless an
// option set them.
func (l *Log) ensureStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return l.ensureFound(ctx, cfg, nil)
}

// ensureFound is ensureStream for a stream already looked up (found, or
// nil to look it up now).
func (l *Log) ensureFound(ctx context.Context, cfg jetstream.StreamConfig, found jetstream.Stream) (jetstream.Stream, error) {
	s, err := found, error(nil)
	if s == nil {
		s, err = l.js.Stream(ctx, cfg.Name)
	}
	var existing *jetstream.StreamConfig
	switch {
	case err == nil:
		existing = &s.CachedInfo().Config
		if l.opts.readOnly {
			return s, nil
		}
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	case l.opts.readOnly:
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, errNotProvisioned)
	}
	cfg.Replicas = l.opts.replicas
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
		if existing != nil {
			cfg.Replicas = existing.Replicas
		}
	}
	if strings.HasPrefix(cfg.Name, l.names.EventsStream) { // every shard of the events
		switch {
		case l.opts.compression != nil:
			cfg.Compression = *l.opts.compression
		case existing != nil:
			cfg.Compression = existing.Compression
		}
	}
	if existing != nil && existing.MaxBytes > 0 && (cfg.Name == l.names.RequestsStream || cfg.Name == l.names.DeadLettersStream) {
		switch {
		case !l.opts.bytesSet:
			// Fitted to the installation's storage (WithStorageBudget) by
			// whoever made it: not this log's to change.
			cfg.MaxBytes = existing.MaxBytes
		case l.opts.bytesAtLeast:
			// A budget computed from the disk never lowers a limit: a
			// stream over its new limit would drop what it holds
			// (pending requests, dead letters).
			cfg.MaxBytes = max(cfg.MaxBytes, existing.MaxBytes)
		}
	}
	if cfg.Name == l.names.RequestsStream {
		n := l.opts.partitions
		if n == 0 {
			n = DefaultPartitions
			if existing != nil && existing.SubjectTransform != nil {
				n = partitionsOf(existing.SubjectTransform)
			}
		}
		cfg.SubjectTransform = l.names.chatTransform(n)
	}
	if existing == nil {
		s, err = l.js.CreateStream(ctx, cfg)
	} else if needsUpdate(*existing, cfg) {
		var updated jetstream.Stream
		if updated, err = l.js.UpdateStream(ctx, cfg); err == nil {
			s = updated
		} else if ctx.Err() == nil {
			// A role that may not change streams (a worker under NATS
			// authentication: the server refuses and the request times
			// out) works with the stream as it is; an admin's Open
			// (turnlog serve, or any admin command) upgrades it. Unless
			// the stream does not take this writer's subjects at all:
			// then no append could be stored.
			if missing := l.missingWriterSubject(*existing, cfg); missing != "" {
				return nil, fmt.Errorf("stream %s was created by an older turnlog and does not take %s, where a %s's steps are now stored (one subject per writing role); open the log once with the admin's key to upgrade it (turnlog serve does at start; on a cluster run turnlog worker --creds admin.nk until it is up): %w",
					cfg.Name, missing, l.opts.writerRole, err)
			}
			l.opts.logger.Warn("stream not upgraded; open the log once as admin to apply the new settings", "stream", cfg.Name, "err", err)
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, storageFull(err))
	}
	return s, nil
}

func needsUpdate(have, want jetstream.StreamConfig) bool {
	return have.Replicas != want.Replicas || have.Description != want.Description ||
		(len(want.Subjects) > 0 && !slices.Equal(have.Subjects, want.Subjects)) ||
		have.AllowDirect != want.AllowDirect || have.Duplicates != want.Duplicates ||
		have.DenyDelete != want.DenyDelete || have.Compression != want.Compression ||
		have.MaxAge != want.MaxAge || unlimited(have.MaxBytes) != unlimited(want.MaxBytes) ||
		unlimited(have.MaxMsgs) != unlimited(want.MaxMsgs) ||
		unlimited(have.MaxMsgsPerSubject) != unlimited(want.MaxMsgsPerSubject) || have.Discard != want.Discard ||
		have.DiscardNewPerSubject != want.DiscardNewPerSubject ||
		(want.SubjectTransform != nil && (have.SubjectTransform == nil || *have.SubjectTransform != *want.SubjectTransform))
}

// unlimited normalises a stream limit: the server reports "no limit" as -1,
// a config written in Go leaves it 0.
func unlimited(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

func (l *Log) ensureBucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := l.js.KeyValue(ctx, cfg.Bucket)
	if err == nil {
		if l.opts.readOnly {
			return kv, nil
		}
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
		}
		info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
		if err := checkBucketSubjects(info.Config, cfg.Bucket); err != nil {
			return nil, err
		}
		if l.opts.replicas == 0 || info.Config.Replicas == l.opts.replicas {
			return kv, nil
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	} else if l.opts.readOnly {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, errNotProvisioned)
	}
	cfg.Replicas = max(l.opts.replicas, 1)
	// Create when missing, update only to change the replicas: a worker's
	// credential may create a bucket on a fresh cluster, never change one.
	if err != nil {
		cfg.Replicas = l.createReplicas()
		kv, err = l.js.CreateKeyValue(ctx, cfg)
	} else {
		kv, err = l.js.UpdateKeyValue(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// ensureObjectStore is ensureBucket for an object store: created when
// missing, its replicas changed only when an option asked for it.
func (l *Log) ensureObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	obs, err := l.js.ObjectStore(ctx, cfg.Bucket)
	if err == nil {
		if l.opts.replicas == 0 || l.opts.readOnly {
			return obs, nil
		}
		st, err := obs.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, err)
		}
		if st.Replicas() == l.opts.replicas {
			return obs, nil
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, err)
	} else if l.opts.readOnly {
		return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, errNotProvisioned)
	}
	cfg.Replicas = max(l.opts.replicas, 1)
	if err != nil {
		cfg.Replicas = l.createReplicas()
		obs, err = l.js.CreateObjectStore(ctx, cfg)
	} else {
		obs, err = l.js.UpdateObjectStore(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, err)
	}
	return obs, nil
}

// errNotProvisioned: a read-only Open found a stream or bucket missing.
var errNotProvisioned = errors.New("it does not exist yet; start `turnlog serve`, or run `turnlog worker` or an admin command against this server, which create it")

// missingWriterSubject is the subject of this log's writer role that want
// (an events stream's configuration) has and have lacks, "" when none is
// missing or cfg is not an events stream.
func (l *Log) missingWriterSubject(have, want jetstream.StreamConfig) string {
	prefix := l.names.Prefix + "." + eventsToken(l.opts.writerRole) + "."
	for _, s := range want.Subjects {
		if strings.HasPrefix(s, prefix) && !slices.Contains(have.Subjects, s) {
			return s
		}
	}
	return ""
}

// refuseRollups turns off a key-value bucket's rollups (nats.go makes
// every bucket with them on, for its Purge), where turnlog never purges a
// key: a message with the Nats-Rollup header deletes every earlier value
// of its key, and a direct get's copy of a purged key's marker keeps the
// header, so a client could have one stored under any key it names as a
// reply subject and wipe the key's history (found by the security
// re-probe, on the templates). Only the admin's log changes the stream;
// a bucket another role created is changed when the admin's opens it.
func (l *Log) refuseRollups(ctx context.Context, stream string) error {
	if l.opts.readOnly || (l.opts.writerRole != "" && l.opts.writerRole != DefaultWriterRole) {
		return nil
	}
	st, err := l.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	cfg := st.CachedInfo().Config
	if !cfg.AllowRollup {
		return nil
	}
	cfg.AllowRollup = false
	if _, err := l.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("stream %s: refuse rollups: %w", stream, err)
	}
	return nil
}

// checkBucketSubjects refuses a bucket whose stream holds other subjects
// than the one nats.go gives a bucket ($KV.<bucket>.>). A worker key may
// create a missing bucket (on a fresh cluster), and so could make one
// with subjects of its choosing, such as another role's reply inbox,
// whose messages the stream would then store where the worker reads them.
// Such a stream is not used, and the error says what to do.
func checkBucketSubjects(cfg jetstream.StreamConfig, bucket string) error {
	want := "$KV." + bucket + ".>"
	if len(cfg.Subjects) == 1 && cfg.Subjects[0] == want {
		return nil
	}
	return fmt.Errorf("bucket %s: its stream %s takes the subjects %s, where a bucket takes %s alone: turnlog did not make it so, and does not use it (it would store whatever is published on the others); an admin deletes it (nats stream rm %s, with the admin's key) and opens the log again to make it anew",
		bucket, cfg.Name, strings.Join(cfg.Subjects, ", "), want, cfg.Name)
}

// createReplicas is how many servers hold a bucket this Log creates: the
// replicas WithReplicas asked for, else as many as hold the installation's
// requests stream (made with the events, by the workers' --replicas). A
// bucket made on first use by a process without the option (`turnlog
// gateway` makes the gateways' own buckets so) would otherwise sit on one
// server of a cluster, and while that server is down no gateway could
// start, nor turnlog status answer.
func (l *Log) createReplicas() int {
	if l.opts.replicas > 0 {
		return l.opts.replicas
	}
	if l.requests != nil {
		if n := l.requests.CachedInfo().Config.Replicas; n > 0 {
			return n
		}
	}
	return 1
}
