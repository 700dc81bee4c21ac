package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnlog/turnlog/tracing"
)

// RequestLimits bound the requests stream, so that requests nobody serves
// (no worker running, a flood from one client) cannot fill the disk. When a
// bound is reached the stream refuses new requests (the publisher gets an
// error and can retry later) instead of dropping stored ones; only MaxAge
// removes a stored request, one that no worker took in all that time.
type RequestLimits struct {
	// MaxAge is how long a request may wait for a worker.
	MaxAge time.Duration
	// MaxBytes bounds the pending requests of all conversations.
	MaxBytes int64
	// MaxPerConversation bounds one conversation's pending requests.
	MaxPerConversation int64
}

// DefaultRequestLimits are the requests stream's limits unless
// WithRequestLimits says otherwise: a week, 1 GiB, 1000 requests per
// conversation.
var DefaultRequestLimits = RequestLimits{MaxAge: 7 * 24 * time.Hour, MaxBytes: 1 << 30, MaxPerConversation: 1000}

// Validate reports the first limit that cannot work.
func (r RequestLimits) Validate() error {
	switch {
	case r.MaxAge < time.Minute:
		return fmt.Errorf("requests max age %s: use at least 1m", r.MaxAge)
	case r.MaxBytes < 1<<20:
		return fmt.Errorf("requests max bytes %d: use at least 1 MiB", r.MaxBytes)
	case r.MaxPerConversation < 1:
		return fmt.Errorf("requests per conversation %d: use at least 1", r.MaxPerConversation)
	}
	return nil
}

// WithRequestLimits sets the requests stream's limits (default
// DefaultRequestLimits). Open applies them to an existing stream too.
func WithRequestLimits(r RequestLimits) Option {
	return func(o *options) error {
		if err := r.Validate(); err != nil {
			return err
		}
		o.requestLimits, o.bytesSet, o.bytesAtLeast = r, true, false
		return nil
	}
}

// requestsConfig is the requests stream as Open creates or upgrades it.
func (l *Log) requestsConfig() jetstream.StreamConfig {
	lim := l.opts.requestLimits
	return jetstream.StreamConfig{
		Name:        l.names.RequestsStream,
		Description: "turnlog chat requests, a work queue partitioned by conversation",
		Subjects:    []string{l.names.ChatWildcard()},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.WorkQueuePolicy,
		Duplicates:  l.opts.duplicates,
		MaxAge:      lim.MaxAge,
		MaxBytes:    lim.MaxBytes,
		// Stored subjects are <prefix>.chat.<partition>.<conversation>
		// (see ChatPartition), so this is per conversation.
		MaxMsgsPerSubject: lim.MaxPerConversation,
		// Refuse what does not fit rather than drop a stored request.
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
	}
}

// PublishRequest stores data, a chat request, on subject (a conversation's
// Names().ChatSubject) with the message ID msgID, the request's ID, so
// that a re-send within the requests stream's duplicate window is stored
// once. It returns the request's sequence in the requests stream (the
// first copy's, for a re-send).
//
// Message IDs are deduplicated across the whole stream, so the same ID
// sent to another conversation within the window would be dropped as a
// duplicate too, and the request would vanish: a duplicate is checked
// (see checkDuplicateRequest), and a request ID that another conversation
// used is refused with a *RequestIDReusedError, which matches
// ErrCauseReused.
//
// It takes the path appends take (see publish), which costs the sender
// less than jetstream.PublishMsg and returns the same errors: a refusal by
// the stream's limits is a *jetstream.APIError (10077).
func (l *Log) PublishRequest(ctx context.Context, subject string, data []byte, msgID string) (uint64, error) {
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{jetstream.MsgIDHeader: []string{msgID}}}
	// The sender's trace goes with the request: the worker that serves
	// it continues the trace (traceparent, W3C), whatever language sent it.
	tracing.Inject(ctx, msg.Header)
	ack, err := l.publish(ctx, msg, l.names.RequestsStream)
	if err != nil {
		return 0, err
	}
	if ack.Duplicate {
		if err := l.checkDuplicateRequest(ctx, l.names.ConversationOf(subject), msgID, ack.Sequence); err != nil {
			return 0, err
		}
	}
	return ack.Sequence, nil
}
