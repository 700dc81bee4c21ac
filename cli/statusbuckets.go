package cli

// This file holds the streams and buckets tables of `turnlog status`.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/eventlog"
)

// streamStatus is one stream as status shows it.
type streamStatus struct {
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	Subjects uint64 `json:"subjects"`
	Replicas int    `json:"replicas"`
	// replicaHealth is, on a cluster, the stream's leader (event shards
	// should each have their own) and the state of its replicas.
	replicaHealth
	// Unavailable says why the stream could not be read ("not created",
	// or no leader: its servers are down or electing one); its counts are
	// then unknown, and status exits 1.
	Unavailable string `json:"unavailable,omitempty"`
}

// bucketStatus is one key-value or object store as status shows it: what
// its stream holds. Created is false for a bucket nothing has needed yet
// (the threading index before the first gateway call or erasure, the
// large snapshots before the first one).
type bucketStatus struct {
	Name string `json:"name"`
	// What is what the bucket keeps, for the reader.
	What    string `json:"what"`
	Created bool   `json:"created"`
	// NotVisible is true when the server refused the credential the
	// bucket's stream info: the client key may not read the threading
	// index's, whose answer can list every key (every gateway
	// conversation, every erased conversation's hash). Its counts are
	// then unknown, not zero.
	NotVisible bool   `json:"not_visible,omitempty"`
	Messages   uint64 `json:"messages"`
	Bytes      uint64 `json:"bytes"`
	// Keys is how many keys (or objects' chunks and descriptions) hold a
	// value.
	Keys     uint64 `json:"keys"`
	Replicas int    `json:"replicas"`
	// replicaHealth is, on a cluster, the bucket's leader and the state
	// of its replicas.
	replicaHealth
	// Unavailable says why the bucket's stream could not be read (no
	// leader: its servers are down or electing one); its counts are
	// then unknown, and status exits 1.
	Unavailable string `json:"unavailable,omitempty"`
}

// bucketStreams are the buckets turnlog keeps beside its streams: each
// bucket's name, its stream's and what it keeps.
func bucketStreams(names eventlog.Names) []struct{ name, stream, what string } {
	return []struct{ name, stream, what string }{
		{names.SnapshotsBucket, "KV_" + names.SnapshotsBucket, "snapshots (a cache)"},
		{names.SnapshotObjectsBucket, "OBJ_" + names.SnapshotObjectsBucket, "large snapshots (a cache)"},
		{names.HistoryBucket, "KV_" + names.HistoryBucket, "history caches (a cache)"},
		{names.TemplatesBucket, "KV_" + names.TemplatesBucket, "system prompt templates"},
		{names.RequestIDsBucket, "KV_" + names.RequestIDsBucket, "client-chosen request IDs"},
		{names.ThreadsBucket, "KV_" + names.ThreadsBucket, "gateway threading index"},
		{names.BackgroundBucket, "KV_" + names.BackgroundBucket, "gateway background responses asked about"},
		{names.GatewaysBucket, "KV_" + names.GatewaysBucket, "running gateways"},
	}
}

// bucketStatuses are the buckets turnlog keeps beside its streams, each
// from its stream's info as lookUpStreams found it (counts only: no key or
// value is read).
func bucketStatuses(names eventlog.Names, found map[string]lookedUp) []bucketStatus {
	buckets := bucketStreams(names)
	out := make([]bucketStatus, 0, len(buckets))
	for _, b := range buckets {
		bs := bucketStatus{Name: b.name, What: b.what}
		r := found[b.stream]
		switch err := r.err; {
		case errors.Is(err, errNotVisible):
			bs.NotVisible = true
		case errors.Is(err, jetstream.ErrStreamNotFound):
		case err != nil:
			bs.Unavailable = unavailableReason(err)
		default:
			info := r.info
			bs.Created, bs.Messages, bs.Bytes, bs.Keys, bs.Replicas = true, info.State.Msgs, info.State.Bytes, info.State.NumSubjects, info.Config.Replicas
			bs.replicaHealth = replicaHealthOf(info)
		}
		out = append(out, bs)
	}
	return out
}

// errNotVisible is streamUnlessRefused's answer when the server refused
// the credential the stream's info.
var errNotVisible = errors.New("not visible to this credential")

// streamUnlessRefused looks stream up, as js.Stream does, but a refusal of
// the request by the server (the credential's role may not ask) is
// errNotVisible, not the command's failure (see refusals.expect).
func streamUnlessRefused(ctx context.Context, js jetstream.JetStream, stream string) (jetstream.Stream, error) {
	box := refusalsIn(ctx)
	if box == nil {
		return js.Stream(ctx, stream)
	}
	// jetstream.New leaves APIPrefix empty and uses the default.
	refused, done := box.expect(cmp.Or(js.Options().APIPrefix, jetstream.DefaultAPIPrefix) + "STREAM.INFO." + stream)
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-refused:
			cancel()
		case <-ctx.Done():
		}
	}()
	s, err := js.Stream(ctx, stream)
	select {
	case <-refused:
		return nil, errNotVisible
	default:
		return s, err
	}
}

// printBuckets writes the buckets table to w (a tabwriter).
func printBuckets(w io.Writer, buckets []bucketStatus) {
	fmt.Fprintln(w, "\nBUCKET\tMESSAGES\tBYTES\tKEYS\tREPLICAS\tHOLDS")
	for _, b := range buckets {
		if b.NotVisible {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t%s (not visible to this credential, such as the client key; the admin key shows it)\n", b.Name, b.What)
			continue
		}
		if b.Unavailable != "" {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t%s (unavailable: %s)\n", b.Name, b.What, b.Unavailable)
			continue
		}
		if !b.Created {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t%s (not created)\n", b.Name, b.What)
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\n", b.Name, b.Messages, b.Bytes, b.Keys, replicasCell(b.Replicas, b.replicaHealth), b.What)
	}
}
