package eventlog

// This file holds the dead letters: the chat requests that could not end
// as request.completed or request.failed in a conversation (their subject
// names no valid conversation, or the conversation could not be written to
// on their last delivery). They are kept, bounded, so that `turnlog status`
// can count and list them and an operator can see what was sent.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// DeadLetter is a chat request that ended without a conversation to record
// it in, with why. It is stored as JSON, so any NATS client can read the
// dead-letters stream.
type DeadLetter struct {
	// Seq is the record's sequence in the dead-letters stream (set when
	// read).
	Seq uint64 `json:"seq,omitempty"`
	// Subject is where the request was published (turnlog.chat.<...>).
	Subject string `json:"subject"`
	// Reason says why it could not end in a conversation.
	Reason string `json:"reason"`
	// Time is when it was declared dead.
	Time time.Time `json:"time"`
	// Received is when the requests stream stored it, RequestSeq its
	// sequence there and Deliveries how often it was delivered.
	Received   time.Time `json:"received,omitzero"`
	RequestSeq uint64    `json:"request_seq,omitempty"`
	Deliveries uint64    `json:"deliveries,omitempty"`
	// Worker is the worker that gave up on it.
	Worker string `json:"worker,omitempty"`
	// Headers and Data are the request message as it was published.
	Headers map[string][]string `json:"headers,omitempty"`
	Data    []byte              `json:"data"`
	// ServedAs is the ID the worker knew the request by: its own
	// request_id, or the one the worker derived for a request without
	// one (stable across redeliveries). Empty in a dead letter a worker
	// of an earlier turnlog stored.
	ServedAs string `json:"served_as,omitempty"`
}

// RequestID is the ID of the chat request d keeps: the ID the worker
// served it under (ServedAs); in a dead letter without one, the
// request_id of its JSON, or its Nats-Msg-Id header when the JSON names
// none ("" when neither does).
func (d DeadLetter) RequestID() string {
	if d.ServedAs != "" {
		return d.ServedAs
	}
	var req struct {
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(d.Data, &req) == nil && req.RequestID != "" {
		return req.RequestID
	}
	if ids := d.Headers[jetstream.MsgIDHeader]; len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// DeadLetterLimits bound the dead-letters stream. When a bound is reached
// the oldest records go: dead letters are for an operator to look into,
// and a flood of garbage must not stop the record of newer ones.
type DeadLetterLimits struct {
	MaxAge   time.Duration
	MaxMsgs  int64
	MaxBytes int64
}

// DefaultDeadLetterLimits keep dead letters for 30 days, at most 100,000
// of them and 256 MiB.
var DefaultDeadLetterLimits = DeadLetterLimits{MaxAge: 30 * 24 * time.Hour, MaxMsgs: 100_000, MaxBytes: 256 << 20}

// WithDeadLetterLimits sets the dead-letters stream's limits (default
// DefaultDeadLetterLimits).
func WithDeadLetterLimits(d DeadLetterLimits) Option {
	return func(o *options) error {
		if d.MaxAge < time.Minute || d.MaxMsgs < 1 || d.MaxBytes < 1<<20 {
			return fmt.Errorf("dead-letter limits %+v: keep them at least a minute, one record and 1 MiB", d)
		}
		o.deadLetters, o.bytesSet, o.bytesAtLeast = d, true, false
		return nil
	}
}

func (l *Log) deadLettersConfig() jetstream.StreamConfig {
	lim := l.opts.deadLetters
	return jetstream.StreamConfig{
		Name:        l.names.DeadLettersStream,
		Description: "turnlog chat requests that could not end in a conversation, with why",
		Subjects:    []string{l.names.DeadLetterWildcard()},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Duplicates:  l.opts.duplicates,
		MaxAge:      lim.MaxAge,
		MaxMsgs:     lim.MaxMsgs,
		MaxBytes:    lim.MaxBytes,
		Discard:     jetstream.DiscardOld,
		AllowDirect: true,
	}
}

// AddDeadLetter stores d (its Time set to now when zero). A request
// declared dead twice (a worker that crashed between this and terminating
// the request) is stored once while the duplicate window lasts, by its
// RequestSeq. A dead letter of a request sent to a conversation that was
// erased after the requests stream received it (d.Received) belongs to
// what was erased: it is refused with ErrConversationErased, and deleted
// again when the erasure came while it was being stored.
func (l *Log) AddDeadLetter(ctx context.Context, d DeadLetter) error {
	if d.Time.IsZero() {
		d.Time = time.Now().UTC()
	}
	if erased, err := l.erasedDeadLetter(ctx, d); err != nil || erased {
		if erased {
			err = ErrConversationErased
		}
		return fmt.Errorf("dead letter for %s: %w", d.Subject, err)
	}
	d.Seq = 0
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	msg := &nats.Msg{Subject: l.names.DeadLetterSubject(), Data: data, Header: nats.Header{}}
	if d.RequestSeq > 0 {
		msg.Header.Set(jetstream.MsgIDHeader, l.names.RequestsStream+":"+strconv.FormatUint(d.RequestSeq, 10))
	}
	deadLetterChecked()
	ack, err := l.js.PublishMsg(ctx, msg)
	if err != nil {
		return fmt.Errorf("dead letter for %s: %w", d.Subject, storageFull(err))
	}
	// Erase notes the erasure before it reads the dead letters: a record
	// its read missed came after the note, which this finds.
	if err := l.dropIfErased(ctx, d, ack.Sequence); err != nil {
		return fmt.Errorf("dead letter for %s: %w", d.Subject, err)
	}
	return nil
}

// deadLetterStream is the dead-letters stream, looked up on first use by
// a log from Attach.
func (l *Log) deadLetterStream(ctx context.Context) (jetstream.Stream, error) {
	return firstUse(l, &l.deadLetters, func() (jetstream.Stream, error) { return l.stream(ctx, l.names.DeadLettersStream) })
}

// deadLetterState is the dead-letters stream's state.
func (l *Log) deadLetterState(ctx context.Context) (jetstream.StreamState, error) {
	s, err := l.deadLetterStream(ctx)
	if err != nil {
		return jetstream.StreamState{}, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return jetstream.StreamState{}, err
	}
	return info.State, nil
}

// DeadLetterCount is how many dead letters are stored.
func (l *Log) DeadLetterCount(ctx context.Context) (uint64, error) {
	st, err := l.deadLetterState(ctx)
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return st.Msgs, nil
}

// DeadLetters returns the newest n dead letters, oldest first. A record
// that is not a DeadLetter (another client published on the subject) is
// returned with its raw text as Data and a Reason saying so.
func (l *Log) DeadLetters(ctx context.Context, n int) ([]DeadLetter, error) {
	st, err := l.deadLetterState(ctx)
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	if st.Msgs == 0 || n <= 0 {
		return []DeadLetter{}, nil
	}
	from := st.FirstSeq
	if st.LastSeq >= uint64(n) && st.LastSeq-uint64(n)+1 > from {
		from = st.LastSeq - uint64(n) + 1
	}
	out := make([]DeadLetter, 0, min(uint64(n), st.Msgs))
	err = l.eachDeadLetter(ctx, jetstreamext.GetBatchSeq(from), st.LastSeq, func(d DeadLetter) bool {
		out = append(out, d)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

// DeadLettersAfter calls fn with each dead letter stored after sequence
// after, oldest first, until fn returns false. It reads by direct gets
// alone (no stream lookup), as a client waiting for its request may.
func (l *Log) DeadLettersAfter(ctx context.Context, after uint64, fn func(DeadLetter) bool) error {
	return l.eachDeadLetter(ctx, jetstreamext.GetBatchSeq(after+1), 0, fn)
}

// DeadLettersSince calls fn with each dead letter the stream stored at or
// after t (the server's clock), oldest first, until fn returns false. A
// client that sent a request reads from a while before it sent it: no
// read of where the stream ended needs to come first, and none can come
// too late.
func (l *Log) DeadLettersSince(ctx context.Context, t time.Time, fn func(DeadLetter) bool) error {
	return l.eachDeadLetter(ctx, jetstreamext.GetBatchStartTime(t), 0, fn)
}

// DuplicateWindow is how long the requests stream drops a request whose
// message ID it saw (Nats-Msg-Id: the request ID) as a duplicate, as this
// Log was opened with: a re-send within it is the first send.
func (l *Log) DuplicateWindow() time.Duration { return l.opts.duplicates }

// eachDeadLetter calls fn with each record of the dead-letters stream from
// start (a sequence or a time) up to sequence last (0: its end), oldest
// first, until fn returns false. A record that is not a DeadLetter
// (another client published on the subject) comes with its raw text as
// Data and a Reason saying so.
func (l *Log) eachDeadLetter(ctx context.Context, start jetstreamext.GetBatchOpt, last uint64, fn func(DeadLetter) bool) error {
	for next := uint64(0); last == 0 || next <= last; {
		if next > 0 {
			start = jetstreamext.GetBatchSeq(next)
		}
		batch, err := jetstreamext.GetBatch(ctx, l.js, l.names.DeadLettersStream, readBatch, start)
		if err != nil {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				return nil
			}
			return fmt.Errorf("read dead letters: %w", err)
		}
		got := 0
		for raw, err := range batch {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				break
			}
			if err != nil {
				return fmt.Errorf("read dead letters: %w", err)
			}
			got++
			// A stored direct-get copy holds the copied record's
			// sequence first: the server's own comes last.
			raw = fromServer(raw)
			next = max(next, raw.Sequence+1)
			if last != 0 && raw.Sequence > last {
				return nil
			}
			if !fn(decodeDeadLetter(raw)) {
				return nil
			}
		}
		if got == 0 {
			return nil
		}
	}
	return nil
}

// decodeDeadLetter reads a record of the dead-letters stream.
func decodeDeadLetter(raw *jetstream.RawStreamMsg) DeadLetter {
	var d DeadLetter
	err := json.Unmarshal(raw.Data, &d)
	if StoredCopy(raw.Header) {
		// The server's headers stored with it: a copy of a record (a
		// direct get's answer a client aimed here), not one AddDeadLetter
		// wrote.
		err = errors.New("a copy of stored message " + raw.Header.Get(jetstream.SequenceHeader) + " (a JetStream answer a client aimed here); not written by turnlog")
	}
	if err == nil && (d.Reason == "" || d.Time.IsZero()) {
		// JSON, but not a record AddDeadLetter wrote (each has its reason
		// and time): a JetStream API answer a client aimed here as its
		// reply subject, say.
		err = errors.New("JSON without a dead letter's reason and time; not written by turnlog")
	}
	if err != nil {
		d = DeadLetter{Subject: raw.Subject, Reason: "not a dead-letter record: " + err.Error(), Time: raw.Time, Data: raw.Data}
	}
	d.Seq = raw.Sequence
	return d
}
