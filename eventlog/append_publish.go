package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
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
// right; and a context without a deadline costs no timer of its own (see
// request). Otherwise it is what jetstream.PublishMsg does, so that
// callers see the same errors: the same default timeout when ctx has no
// deadline, jetstream.ErrNoStreamResponse when no stream answers, and a
// *jetstream.APIError wrapped as "nats: ..." when the stream refuses the
// message. It differs in one thing: while no stream answers (a cluster
// electing the stream's leader, which a loaded cluster can take seconds
// over), it sends the message again every 250 ms for up to the timeout,
// where jetstream.PublishMsg gives up after half a second. A message no
// stream received is safe to send again (and the message ID and the
// expected sequence fence it besides).
func (l *Log) publish(ctx context.Context, msg *nats.Msg, stream string) (pubAck, error) {
	timeout := l.js.Options().DefaultTimeout
	start := time.Now()
	resp, err := request(ctx, l.nc, msg, timeout)
	for errors.Is(err, nats.ErrNoResponders) && time.Since(start)+jetstream.DefaultPubRetryWait < timeout {
		t := time.NewTimer(jetstream.DefaultPubRetryWait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		resp, err = request(ctx, l.nc, msg, timeout)
	}
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return pubAck{}, jetstream.ErrNoStreamResponse
		}
		if errors.Is(err, nats.ErrReconnectBufExceeded) {
			// A connection without a reconnect buffer (the gateway's)
			// while it is re-established: said as what it is.
			return pubAck{}, fmt.Errorf("NATS is unreachable (the connection is being re-established): %w", err)
		}
		return pubAck{}, err
	}
	if ack, ok := parseAck(resp.Data, stream); ok {
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
		return pubAck{}, fmt.Errorf("nats: %w", storageFull(full.Error))
	}
	if full.Stream == "" {
		return pubAck{}, jetstream.ErrInvalidJSAck
	}
	return full.pubAck, nil
}

// request sends msg and waits for the reply. A context with a deadline is
// watched while waiting. One without (a worker's, cancelled only when it
// stops; a command's, cancelled by a signal) is checked before the
// message goes out, and the wait is bounded by timeout, counted by the
// connection's pooled timer: watching it meant a context.WithTimeout per
// call, a timer of its own and a registration with its parent, about 2 %
// of the CPU of `turnlog bench --workers`. A reply is a round trip of well
// under a millisecond; cancelling the wait for one already sent would not
// take the message back, only leave the caller unsure whether it was
// stored. A timeout matches context.DeadlineExceeded, as it does from
// jetstream.PublishMsg.
func request(ctx context.Context, nc *nats.Conn, msg *nats.Msg, timeout time.Duration) (*nats.Msg, error) {
	if _, ok := ctx.Deadline(); ok {
		return nc.RequestMsgWithContext(ctx, msg)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := nc.RequestMsg(msg, timeout)
	if errors.Is(err, nats.ErrTimeout) {
		err = fmt.Errorf("%w: %w", err, context.DeadlineExceeded)
	}
	return resp, err
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

// stepMsg is the message Append sends, kept for reuse: nats.Conn encodes
// the header map per request and keeps no reference to the message, so
// one map serves every append instead of a new one with two slices each;
// and the step's bytes are encoded into buf, which the message keeps for
// the next append instead of a new array each.
type stepMsg struct {
	msg           nats.Msg
	id, seq, filt []string
	buf           []byte
}

// maxPooledStep is the largest encoding buffer a stepMsg keeps: a rare
// large step (a long pasted text) does not pin its memory in the pool.
const maxPooledStep = 64 << 10

var stepMsgs = sync.Pool{New: func() any {
	sm := &stepMsg{id: make([]string, 1), seq: make([]string, 1), filt: make([]string, 1)}
	sm.msg.Header = nats.Header{jetstream.MsgIDHeader: sm.id, jetstream.ExpectedLastSubjSeqHeader: sm.seq,
		ExpectedLastSubjSeqSubjHeader: sm.filt}
	return sm
}}

func getStepMsg() *stepMsg { return stepMsgs.Get().(*stepMsg) }

// set makes the message a step on subject whose expected last sequence
// seq is checked against the last message on filter (the conversation's
// subjects, see Names.EventsFilter).
func (sm *stepMsg) set(subject string, data []byte, id, seq, filter string) {
	sm.msg.Subject, sm.msg.Data, sm.id[0], sm.seq[0], sm.filt[0] = subject, data, id, seq, filter
}

// ExpectedLastSubjSeqSubjHeader names the subject (a wildcard here) whose
// last message the expected last sequence is checked against
// (nats-server 2.11+): a step goes to its writer's subject, and the check
// covers all of the conversation's.
const ExpectedLastSubjSeqSubjHeader = "Nats-Expected-Last-Subject-Sequence-Subject"

func putStepMsg(sm *stepMsg) {
	sm.set("", nil, "", "", "")
	if cap(sm.buf) > maxPooledStep {
		sm.buf = nil
	}
	stepMsgs.Put(sm)
}
