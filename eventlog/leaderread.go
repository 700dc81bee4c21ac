package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reads that no lagging replica cuts short.
//
// A direct get (the stream's AllowDirect) is answered by any replica that
// subscribed to direct gets: on a replicated stream nats-server subscribes
// a follower once it is about 90% caught up and does not unsubscribe it
// when it falls behind again, and it hands a client's request to any
// member of the queue group, the local one or one across a route (v2.15.2
// server/jetstream_cluster.go monitorStream, server/client.go
// processMsgResults). The leader acknowledges an append once a majority
// stored it, so a replica may lack the last acknowledged messages for as
// long as its link to the leader is slow, and a direct get it answers
// knows nothing of them: a batched read then ends early, its last message
// saying none is pending, and the last-message get answers with an older
// one. Neither is an error. The stream's message get API (STREAM.MSG.GET)
// is answered by the stream leader alone, which stores a message before it
// acknowledges it.
//
// A mirror created with mirror_direct (by an operator scaling reads, as
// the NATS documentation suggests) joins the same queue group, on a single
// server too, and answers from what it has copied so far, or, when its
// filter leaves the conversation out, with "not found".
//
// So a read of a whole conversation (Events, Load, LoadAt, CatchUp) asks
// the stream's leader for the conversation's last message, reads with
// direct gets as before, and asks the leader for whatever the direct gets
// did not reach up to that last message. One request more per read on a
// cluster; on a single server the last message is a direct get as before
// when the stream itself answers it (its Nats-Stream header), and only a
// "not found" or a mirror's answer costs the request to the stream.

// replicasMayLag reports whether a direct get may be answered by a replica
// behind the stream's leader: whether the connection is to a cluster. Known
// without a lookup (an attached log has none), and true as soon as a
// stream could have more than one replica, whatever it had when the log
// was opened.
func (l *Log) replicasMayLag() bool {
	return l.nc.ConnectedClusterName() != ""
}

// committedLast is the conversation's last message as its stream holds it
// (its leader, on a cluster): every step acknowledged before the call is
// at or before it.
func (l *Log) committedLast(ctx context.Context, conversation string) (*jetstream.RawStreamMsg, error) {
	n, err := l.shardCount(ctx, conversation)
	if err != nil {
		return nil, err
	}
	// Every subject of the conversation's steps, legacy and each role's:
	// the leader's last message on the filter, as reads and appends use it
	// (STREAM.MSG.GET's last_by_subj takes a wildcard: the store's
	// LoadLastMsg matches it, nats-server v2.15.2 filestore.go
	// loadLastLocked, memstore.go loadLastLocked).
	names := l.names.WithEventShards(n)
	stream, subject := names.EventsStreamOf(conversation), names.EventsFilter(conversation)
	if !l.replicasMayLag() {
		// A single server: the stream is its only replica, and a direct
		// get it answers says Nats-Stream: <stream>. A mirror made with
		// mirror_direct answers the stream's direct gets too, from what
		// it has copied (and a filtered one never has this
		// conversation): a message from it, or a "not found" that
		// anyone may have sent, is checked with the stream itself.
		// No responder to a direct get (the stream's direct gets
		// switched off, or not answered yet) is asked of the stream too.
		m, err := l.lastMsg(ctx, conversation)
		switch {
		case err == nil && serverValue(m.Header, jetstream.StreamHeader) == stream:
			return m, nil
		case err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) && !errors.Is(err, nats.ErrNoResponders):
			return nil, err
		}
	}
	return l.leaderGet(ctx, stream, leaderGetRequest{LastFor: subject})
}

// MessageAt is the message at seq in stream as the stream holds it. It
// exists for the checks whose answer decides something (a duplicate step,
// an erased conversation, a request already ended), which neither a
// replica nor a mirror may answer: on a cluster a replica that has not
// applied the message yet says "not found" of a message the stream holds,
// and one that has not applied a purge or a delete yet still returns the
// message the stream no longer holds (seen in CI: Holds said an erased
// conversation still held its step). So on a cluster the stream's leader
// answers. On a single server the stream is its only replica and a direct
// get it answers is the stream's word; a mirror made with mirror_direct
// answers the stream's direct gets too, in its own name, so its answer,
// and a "not found" that anyone may have sent, is checked with the
// stream. Not found is jetstream.ErrMsgNotFound.
func (l *Log) MessageAt(ctx context.Context, stream jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	name := stream.CachedInfo().Config.Name
	if !stream.CachedInfo().Config.AllowDirect {
		m, err := stream.GetMsg(ctx, seq) // the message get API: the leader answers
		return fromServer(m), err
	}
	if l.replicasMayLag() {
		return l.leaderGet(ctx, name, leaderGetRequest{Seq: seq})
	}
	m, err := stream.GetMsg(ctx, seq)
	m = fromServer(m)
	switch {
	case err == nil && serverValue(m.Header, jetstream.StreamHeader) == name:
		return m, nil
	case err != nil && !errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, err
	}
	return l.leaderGet(ctx, name, leaderGetRequest{Seq: seq})
}

// leaderGetRequest is the body of a STREAM.MSG.GET request.
type leaderGetRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
}

// leaderGetResponse is the answer to a STREAM.MSG.GET request.
type leaderGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// leaderGet asks stream's leader for one message. Not found is
// jetstream.ErrMsgNotFound; other refusals are *jetstream.APIError, so
// that Unavailable tells a stream without a leader from a refusal.
//
// While the stream has no leader (an election, a server cut off from the
// others, the moments after a network heals), its replicas answer "JetStream
// system temporarily unavailable" (10008) or nobody answers: it asks
// again every 250 ms while ctx allows (the log's default timeout when ctx
// has no deadline), as an append does, and then returns that answer.
func (l *Log) leaderGet(ctx context.Context, stream string, req leaderGetRequest) (*jetstream.RawStreamMsg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.js.Options().DefaultTimeout)
		defer cancel()
	}
	for {
		m, err := l.leaderGetOnce(ctx, stream, req)
		if !leaderless(err) {
			return m, err
		}
		t := time.NewTimer(leaderWait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// leaderWait is how long a read waits before it asks a stream without a
// leader again (jetstream.DefaultPubRetryWait, as an append).
const leaderWait = jetstream.DefaultPubRetryWait

// leaderless reports whether err is a stream's answer while it has no
// leader: nobody answered at once, or a replica said it is unavailable.
// A request that timed out is not asked again: its context is over.
func leaderless(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrNoResponders) || errors.As(err, &apiErr) && Unavailable(apiErr)
}

// leaderGetOnce is one request of leaderGet.
func (l *Log) leaderGetOnce(ctx context.Context, stream string, req leaderGetRequest) (*jetstream.RawStreamMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	subj := l.js.Options().APIPrefix
	if subj == "" {
		subj = jetstream.DefaultAPIPrefix
	}
	resp, err := l.nc.RequestWithContext(ctx, subj+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("message get from %s's leader: %w", stream, err)
		}
		return nil, err
	}
	var r leaderGetResponse
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, fmt.Errorf("message get from %s's leader: %w", stream, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, jetstream.ErrMsgNotFound
	case r.Error != nil:
		return nil, fmt.Errorf("message get from %s's leader: %w", stream, r.Error)
	case r.Message == nil:
		return nil, fmt.Errorf("message get from %s's leader: %w", stream, jetstream.ErrInvalidJetStreamResponse)
	}
	m := &jetstream.RawStreamMsg{Subject: r.Message.Subject, Sequence: r.Message.Sequence, Data: r.Message.Data, Time: r.Message.Time, Header: nats.Header{}}
	if len(r.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(r.Message.Header); err != nil {
			return nil, fmt.Errorf("message get from %s's leader: message %d: %w", stream, m.Sequence, err)
		}
	}
	return asDirectGet(m, stream), nil
}

// leaderRest yields, from the stream's leader, the messages on subject
// from sequence next up to until (beyond it only as far as the message
// holding until): what a batched read answered by a lagging replica, or
// cut short by a dropped connection, did not reach. One round trip per
// message; a replica lags by a few. until must be a message that was there
// when the read began: when the leader has nothing from next on, the
// messages were removed during the read (an erase), and that is an error.
//
// read is the last message the read yielded, 0 for none. A replica that
// had not reached until may not have applied an erase before it either, so
// what it answered is only a part of the conversation if the leader's next
// message follows it: its link (see chain.go) must name read.
func (l *Log) leaderRest(ctx context.Context, conversation, stream, subject string, next, until, read uint64, yield func(message, error) bool) {
	for next <= until {
		raw, err := l.leaderGet(ctx, stream, leaderGetRequest{Seq: next, NextFor: subject})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			raw, err = l.leaderApplied(ctx, stream, subject, next)
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			yield(message{}, fmt.Errorf("read %s: message %d, the last when the read began, is gone (the conversation was erased while it was read?)",
				conversation, until))
			return
		}
		if err != nil {
			yield(message{}, fmt.Errorf("read %s: message %d onwards from the stream leader: %w", conversation, next, err))
			return
		}
		if st := l.storedFrom(raw); read > 0 && st.linked && st.prev != read {
			yield(message{}, fmt.Errorf("read %s: the stream's message %d follows message %d, not message %d read from a replica: the conversation changed while it was read (erased and written anew?); read it again",
				conversation, st.seq, st.prev, read))
			return
		}
		read, next = raw.Sequence, raw.Sequence+1
		if !l.yieldStep(conversation, raw, yield) {
			return
		}
	}
}

// yieldStep decodes raw, a message of conversation, and yields it with
// the role that stored it (see Log.writerOf); a message that is not a step
// (foreign or corrupt) is yielded as its error, which a caller may go on
// past (see Events). It reports whether the caller wants more.
func (l *Log) yieldStep(conversation string, raw *jetstream.RawStreamMsg, yield func(message, error) bool) bool {
	st := l.storedFrom(raw)
	evs, err := readStep(conversation, raw)
	if errors.Is(err, ErrForeignMessage) {
		// Its sequence and ID: a Turn that ends with it names it (see
		// fold), and a read from it checks it (see readFrom).
		return yield(message{seq: st.seq, msgID: st.msgID, raw: st}, fmt.Errorf("read %s: %w", conversation, err))
	}
	if err != nil {
		return yield(message{seq: raw.Sequence}, fmt.Errorf("read %s: %w", conversation, err))
	}
	return yield(message{seq: st.seq, msgID: st.msgID, writer: st.writer, events: evs, raw: st}, nil)
}

// leaderSettle bounds how long a read waits for a stream leader to apply
// what it (or its predecessor) acknowledged; see leaderApplied.
const leaderSettle = 3 * time.Second

// leaderApplied asks the leader again, for a while, for the first message
// on subject from next on, which it said it does not hold. A leader newly
// elected answers before it has applied every step its predecessor
// acknowledged (an election during the read), and holds them a moment
// later. The conversation's messages all gone is an erase: not found at
// once.
func (l *Log) leaderApplied(ctx context.Context, stream, subject string, next uint64) (*jetstream.RawStreamMsg, error) {
	settle, cancel := context.WithTimeout(ctx, leaderSettle)
	defer cancel()
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		if _, err := l.leaderGet(settle, stream, leaderGetRequest{LastFor: subject}); err != nil {
			return nil, settled(ctx, err)
		}
		select {
		case <-settle.Done():
			return nil, settled(ctx, settle.Err())
		case <-time.After(wait):
		}
		raw, err := l.leaderGet(settle, stream, leaderGetRequest{Seq: next, NextFor: subject})
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			return raw, settled(ctx, err)
		}
	}
}

// settled is err, except that the end of leaderApplied's own wait (ctx, its
// caller's, still running) means the message never came: not found.
func settled(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return jetstream.ErrMsgNotFound
	}
	return err
}
