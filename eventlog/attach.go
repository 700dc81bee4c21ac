package eventlog

// This file holds the log of a client that touches only what it uses:
// Attach looks nothing up, and each stream, bucket or object store is
// looked up the first time a method needs it.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Attach returns a Log on nc without any request to the servers: no stream,
// bucket or object store is looked up, created or changed until a method
// needs it. It is for clients, such as `turnlog chat`, that send a request
// and read one conversation: with Open they would first look up every
// stream and bucket, and an election of any one of them (even of a bucket
// they never use) would hold them up. Sending (worker.Send), Events,
// Watch, LastSeq and Last need no lookup at all (LastSeq, Last, Watch and
// EventsAfter are then direct gets that any replica answers; Events, on a
// cluster, also asks the stream leader where the conversation ends, see
// leaderread.go); Load, Append and the rest look up what they use on first
// use. Open creates and upgrades the streams;
// Attach expects a worker or `turnlog serve` to have done so. Partitions
// is 0 on an attached log.
func Attach(nc *nats.Conn, opts ...Option) (*Log, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("attach event log: %w", err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("attach event log: %w", err)
	}
	l := &Log{nc: nc, js: js, names: NamesFor(o.prefix), opts: o}
	l.setWriterPrefixes()
	return l, nil
}

// ensureHandles looks up the events stream, the snapshots bucket and the
// snapshot object store of an attached log, once; on a log from Open it
// returns at once.
func (l *Log) ensureHandles(ctx context.Context) error {
	if l.ready.Load() {
		return nil
	}
	l.lookup.Lock()
	defer l.lookup.Unlock()
	if l.ready.Load() {
		return nil
	}
	var err error
	if l.shards == nil {
		n, _, err := l.recordedShards(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("stream %s: %w", l.names.EventsStream, jetstream.ErrStreamNotFound)
		}
		names := l.names.WithEventShards(n)
		shards := make([]jetstream.Stream, n)
		for k := range shards {
			name := names.EventsShardStream(k)
			if shards[k], err = l.stream(ctx, name); err != nil {
				return err
			}
		}
		l.eventShards.CompareAndSwap(0, int32(n))
		if int(l.eventShards.Load()) != n {
			return fmt.Errorf("stream %s: the installation's event shard count changed from %d to %d while in use", names.EventsShardStream(0), l.eventShards.Load(), n)
		}
		l.shards = shards
	}
	if l.snaps == nil {
		if l.snaps, err = l.js.KeyValue(ctx, l.names.SnapshotsBucket); err != nil {
			return fmt.Errorf("bucket %s: %w", l.names.SnapshotsBucket, err)
		}
	}
	if l.bigSnaps == nil {
		if l.bigSnaps, err = l.js.ObjectStore(ctx, l.names.SnapshotObjectsBucket); err != nil {
			return fmt.Errorf("object store %s: %w", l.names.SnapshotObjectsBucket, err)
		}
	}
	if l.history == nil {
		// Optional: without it, histories are read from the events.
		if h, err := l.js.KeyValue(ctx, l.names.HistoryBucket); err == nil {
			l.history = h
		}
	}
	l.ready.Store(true)
	return nil
}

// lastMsg is the last message of a conversation's events (on any of its
// subjects, Names.EventsFilter). On a log from Open it is the stream's
// GetLastMsgForSubject; on an attached log that has not looked the streams
// up, a direct get, which needs no lookup and which any replica answers,
// even while the stream elects a leader.
func (l *Log) lastMsg(ctx context.Context, conversation string) (*jetstream.RawStreamMsg, error) {
	if l.ready.Load() {
		m, err := l.streamFor(conversation).GetLastMsgForSubject(ctx, l.Names().EventsFilter(conversation))
		return fromServer(m), err
	}
	n, err := l.shardCount(ctx, conversation)
	if err != nil {
		return nil, err
	}
	names := l.names.WithEventShards(n)
	return l.directLast(ctx, names.EventsStreamOf(conversation), names.EventsFilter(conversation))
}

// msgAt is a conversation's message at seq in its events stream (nil when
// there is none or it is another conversation's is for the caller to see),
// by a direct get as lastMsg.
func (l *Log) msgAt(ctx context.Context, conversation string, seq uint64) (*jetstream.RawStreamMsg, error) {
	if l.ready.Load() {
		m, err := l.streamFor(conversation).GetMsg(ctx, seq)
		return fromServer(m), err
	}
	stream, _, err := l.eventsOf(ctx, conversation)
	if err != nil {
		return nil, err
	}
	return l.directGet(ctx, stream, "", []byte(`{"seq":`+strconv.FormatUint(seq, 10)+`}`))
}

// directLast is the last message on subject in stream, by a direct get.
func (l *Log) directLast(ctx context.Context, stream, subject string) (*jetstream.RawStreamMsg, error) {
	return l.directGet(ctx, stream, "."+subject, nil)
}

// directGet sends a direct get to stream: to the API subject with suffix
// appended (".<subject>" for the last message of a subject), with body as
// the request.
func (l *Log) directGet(ctx context.Context, stream, suffix string, body []byte) (*jetstream.RawStreamMsg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.js.Options().DefaultTimeout)
		defer cancel()
	}
	subj := l.js.Options().APIPrefix
	if subj == "" {
		subj = jetstream.DefaultAPIPrefix
	}
	subj += "DIRECT.GET." + stream + suffix
	resp, err := l.nc.RequestWithContext(ctx, subj, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("direct get from %s: %w", stream, err)
		}
		return nil, err
	}
	if len(resp.Data) == 0 && resp.Header.Get("Status") != "" {
		switch resp.Header.Get("Status") {
		case "404":
			return nil, jetstream.ErrMsgNotFound
		default:
			return nil, fmt.Errorf("direct get from %s: status %s %s", stream, resp.Header.Get("Status"), resp.Header.Get("Description"))
		}
	}
	// The server's headers come after those stored with the message
	// (see serverValue).
	seq, err := strconv.ParseUint(serverValue(resp.Header, jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("direct get from %s: bad %s header: %w", stream, jetstream.SequenceHeader, err)
	}
	tm, _ := time.Parse(time.RFC3339Nano, serverValue(resp.Header, timeStampHeader))
	return &jetstream.RawStreamMsg{Subject: serverValue(resp.Header, jetstream.SubjectHeader), Sequence: seq, Header: resp.Header, Data: resp.Data, Time: tm}, nil
}
