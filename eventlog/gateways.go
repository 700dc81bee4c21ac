package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// GatewayBeat is how often a running recording gateway says so in the
// gateways bucket; GatewaySeenWithin is how recently one must have said
// it to be listed as running (three beats: one lost to a slow server is
// no stop).
const (
	GatewayBeat       = 30 * time.Second
	GatewaySeenWithin = 3 * GatewayBeat
)

// gatewaysKeep is how long an entry lives in the gateways bucket (its
// MaxAge) after its gateway last said it runs: one that stopped without
// removing it (killed, or its connection lost) is listed as not seen
// since, for a day.
const gatewaysKeep = 24 * time.Hour

// Gateways is the installation's list of running recording gateways
// (serve's, and each `turnlog gateway`), so that `turnlog status` lists
// them beside the workers: a gateway answers no request (its role may
// publish only where it records), so it says it runs by writing its entry
// every GatewayBeat, and removes it when it stops. A KV bucket
// (Names.GatewaysBucket), one key per gateway process: its instance ID.
// No entry holds a credential or any conversation's content.
type Gateways struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	stream string
}

// GatewayPresence is what a running gateway says of itself.
type GatewayPresence struct {
	// Instance is the gateway process's ID, as its model calls name it
	// (inference.started's gateway instance).
	Instance string `json:"instance"`
	// Listen is the address it serves on, as its command was given it.
	Listen string `json:"listen,omitempty"`
	// Host and PID say where it runs.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Upstreams are the base URLs it forwards to, by API family
	// ("openai", "anthropic"), without any user or password.
	Upstreams map[string]string `json:"upstreams,omitempty"`
	// Managed lists the families it holds a provider key for (the
	// managed-keys mode); the others pass the app's credentials through.
	Managed []string `json:"managed_keys,omitempty"`
	// RecordOptional: it forwards calls while NATS is away and records
	// them from its spool once it is back.
	RecordOptional bool      `json:"record_optional,omitempty"`
	Started        time.Time `json:"started"`
	// Seen is when it last said it runs.
	Seen time.Time `json:"seen"`
}

// Running reports whether the gateway said it runs within
// GatewaySeenWithin of now: not later than that ahead of now either (a
// clock far ahead, or an entry another client wrote to seem running
// for a day).
func (p GatewayPresence) Running(now time.Time) bool {
	d := now.Sub(p.Seen)
	return d <= GatewaySeenWithin && d >= -GatewaySeenWithin
}

// Gateways opens the installation's gateways bucket, creating it when it
// is missing (a worker's credential, which gateways run with, may).
func (l *Log) Gateways(ctx context.Context) (*Gateways, error) {
	kv, err := l.ensureBucket(ctx, gatewaysBucketConfig(l.names))
	if err != nil {
		return nil, fmt.Errorf("open the list of running gateways: %w", err)
	}
	return &Gateways{js: l.js, kv: kv, stream: "KV_" + l.names.GatewaysBucket}, nil
}

func gatewaysBucketConfig(n Names) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      n.GatewaysBucket,
		Description: "turnlog: the recording gateways that run, each renewing its entry while it does",
		History:     1,
		TTL:         gatewaysKeep,
		Storage:     jetstream.FileStorage,
	}
}

// Put stores (or renews) p's entry.
func (g *Gateways) Put(ctx context.Context, p GatewayPresence) error {
	if err := validInstance(p.Instance); err != nil {
		return err
	}
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if _, err := g.kv.Put(ctx, p.Instance, v); err != nil {
		return fmt.Errorf("say gateway %s runs: %w", p.Instance, err)
	}
	return nil
}

// Delete removes instance's entry (purged: nothing of it stays).
func (g *Gateways) Delete(ctx context.Context, instance string) error {
	if err := validInstance(instance); err != nil {
		return err
	}
	if err := g.kv.Purge(ctx, instance); err != nil {
		return fmt.Errorf("say gateway %s stopped: %w", instance, err)
	}
	return nil
}

// ListGateways returns the entries of the gateways bucket, latest seen
// first: running ones and those that stopped without removing theirs
// within the last day (see GatewayPresence.Running). None when no
// gateway ever ran (the bucket was never made). An entry another client
// wrote that is not a gateway's is left out.
func (l *Log) ListGateways(ctx context.Context) ([]GatewayPresence, error) {
	stream := "KV_" + l.names.GatewaysBucket
	found, err := latestEntries(ctx, l.js, stream)
	if err != nil {
		// A direct get of a stream that does not exist has no responders:
		// asked, the server says which it is.
		if _, serr := l.js.Stream(ctx, stream); errors.Is(serr, jetstream.ErrStreamNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the list of running gateways: %w", err)
	}
	out := []GatewayPresence{}
	for _, raw := range found {
		if deleted(raw) {
			continue
		}
		var p GatewayPresence
		key := strings.TrimPrefix(raw.Subject, "$KV."+l.names.GatewaysBucket+".")
		if json.Unmarshal(raw.Data, &p) != nil || p.Instance != key {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b GatewayPresence) int { return b.Seen.Compare(a.Seen) })
	return out, nil
}
