package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pubAck is what Append needs of a JetStream publish acknowledgement.
type pubAck struct {
	Stream    string `json:"stream"`
	Sequence  uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// publish is jetstream.PublishMsg for the one message shape Append sends,
// without the generic costs that showed in the profile of a one-event
// append: the acknowledgement is parsed by hand when it has the exact
// shape nats-server writes for a stored or duplicate message (the server
// builds it from a template, see stream.go's mset.pubAck), and decoded as
// JSON otherwise, so an error, a domain or a future field still comes out
// right. Everything else is what jetstream.PublishMsg does, so that callers
// see the same errors: the same default timeout when ctx has no deadline,
// the same retries while no stream answers (a cluster electing a leader),
// jetstream.ErrNoStreamResponse after them, and a *jetstream.APIError
// wrapped as "nats: ..." when the stream refuses the message.
func (l *Log) publish(ctx context.Context, msg *nats.Msg) (pubAck, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.js.Options().DefaultTimeout)
		defer cancel()
	}
	resp, err := l.nc.RequestMsgWithContext(ctx, msg)
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < jetstream.DefaultPubRetryAttempts; r++ {
		t := time.NewTimer(jetstream.DefaultPubRetryWait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		resp, err = l.nc.RequestMsgWithContext(ctx, msg)
	}
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return pubAck{}, jetstream.ErrNoStreamResponse
		}
		return pubAck{}, err
	}
	if ack, ok := parseAck(resp.Data, l.names.EventsStream); ok {
		return ack, nil
	}
	var full struct {
		Error *jetstream.APIError `json:"error,omitempty"`
		pubAck
	}
	if err := json.Unmarshal(resp.Data, &full); err != nil {
		return pubAck{}, jetstream.ErrInvalidJSAck
	}
	if full.Error != nil {
		return pubAck{}, fmt.Errorf("nats: %w", full.Error)
	}
	if full.Stream == "" {
		return pubAck{}, jetstream.ErrInvalidJSAck
	}
	return full.pubAck, nil
}

// parseAck reads an acknowledgement of the exact form
// {"stream":"<stream>","seq":<n>} or {"stream":"<stream>","seq":<n>,"duplicate": true}
// and reports false for anything else (an error, a domain, another
// stream, a field it does not know), which the caller decodes as JSON.
func parseAck(data []byte, stream string) (pubAck, bool) {
	const pre, mid = `{"stream":"`, `","seq":`
	rest, ok := bytes.CutPrefix(data, []byte(pre))
	if !ok {
		return pubAck{}, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(stream)); !ok {
		return pubAck{}, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(mid)); !ok {
		return pubAck{}, false
	}
	// Up to 19 digits cannot overflow a uint64.
	var seq uint64
	n := 0
	for ; n < len(rest) && n < 20 && rest[n] >= '0' && rest[n] <= '9'; n++ {
		seq = seq*10 + uint64(rest[n]-'0')
	}
	if n == 0 || n > 19 || rest[0] == '0' {
		return pubAck{}, false
	}
	ack := pubAck{Stream: stream, Sequence: seq}
	switch string(rest[n:]) {
	case `}`:
	case `,"duplicate": true}`, `,"duplicate":true}`:
		ack.Duplicate = true
	default:
		return pubAck{}, false
	}
	return ack, true
}
