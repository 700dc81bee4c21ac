package worker

// This file holds how a request that cannot end in a conversation ends
// all the same: as a dead letter (eventlog.DeadLetter) that `turnlog
// status --dead` lists, never as a message terminated without a trace.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// deadLetter stores the request as a dead letter with reason and
// terminates it. If the dead letter cannot be stored, the request stays in
// the requests stream to be tried again, unless this was its last delivery.
func (w *Worker) deadLetter(ctx context.Context, m jetstream.Msg, meta *jetstream.MsgMetadata, subject, reason string) {
	d := eventlog.DeadLetter{Subject: subject, Reason: reason, Received: meta.Timestamp.UTC(),
		RequestSeq: meta.Sequence.Stream, Deliveries: meta.NumDelivered, Worker: w.cfg.Name,
		Headers: m.Headers(), Data: m.Data(),
		ServedAs: w.servedAs(m.Data(), subject, meta.Sequence.Stream, meta.Timestamp)}
	log := w.log.With("subject", subject, "request_seq", meta.Sequence.Stream, "reason", reason)
	err := w.cfg.Log.AddDeadLetter(context.WithoutCancel(ctx), d)
	if errors.Is(err, eventlog.ErrStorageFull) {
		err = w.holdDeadLetter(ctx, m, d, log, err)
	}
	if errors.Is(err, eventlog.ErrConversationErased) {
		// The request belongs to what was erased: neither stored nor
		// tried again, as one whose conversation was erased while it
		// was served.
		w.metrics.requests.WithLabelValues("erased").Inc()
		log.Warn("request dropped: its conversation was erased after it was sent; no dead letter is kept")
	} else if err != nil {
		if meta.NumDelivered < w.lastDelivery() || errors.Is(err, eventlog.ErrStorageFull) {
			// A request is not terminated for want of space, even on its
			// last delivery: it stays in the requests stream.
			log.Warn("dead letter not stored; the request will be tried again", "err", err)
			_ = m.NakWithDelay(time.Duration(meta.NumDelivered) * time.Second)
			return
		}
		log.Error("dead letter not stored on the request's last delivery: the request is lost", "err", err)
	} else {
		w.metrics.deadLetters.Inc()
		w.metrics.requests.WithLabelValues("dead_lettered").Inc()
		log.Warn("request dead-lettered")
	}
	_ = m.Term()
}

// servedAs is the ID the worker knows a request by (its own, or the one
// derived from the request message, seq and at, as parseRequest gives
// it), for its dead letter.
func (w *Worker) servedAs(data []byte, subject string, seq uint64, at time.Time) string {
	req, _ := parseRequest(data, w.names.ConversationOf(subject), seq, at, w.cfg.MaxTextBytes)
	return req.RequestID
}

// holdDeadLetter keeps m, whose dead letter JetStream's storage was too
// full to take (err), in the worker's hands and stores the dead letter as
// soon as there is room, as holdWhileFull does for a request's steps: a
// request is not terminated without a trace for want of space. It returns
// the last error, which still matches eventlog.ErrStorageFull when the
// worker was told to stop first.
func (w *Worker) holdDeadLetter(ctx context.Context, m jetstream.Msg, d eventlog.DeadLetter, log *slog.Logger, err error) error {
	release := w.progress.hold(m)
	defer release()
	log.Warn("JetStream storage is full: request held until its dead letter can be stored", "err", err)
	_, err = w.whileFull(ctx, err, func() error {
		return w.cfg.Log.AddDeadLetter(context.WithoutCancel(ctx), d)
	})
	return err
}

// endLastDelivery ends a request that would be retried (cause says why)
// but is on its last delivery: as request.failed in its conversation if
// the log takes it, else as a dead letter. The request is acknowledged or
// terminated either way.
func (w *Worker) endLastDelivery(ctx context.Context, m jetstream.Msg, meta *jetstream.MsgMetadata, req Request, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	reason := fmt.Sprintf("gave up after %d deliveries: %v", meta.NumDelivered, cause)
	tx := engine.NewTx(projector.New(req.Conversation), req.RequestID)
	// The user's text goes with the failure when the request stored
	// nothing yet (see fail).
	_ = tx.Emit(ActorWorker, events.UserAppended{BlockID: engine.NewID(), Text: req.Text})
	out, err := w.fail(ctx, tx, reason)
	if out == ack {
		if err := m.DoubleAck(ctx); err != nil {
			w.log.Warn("ack failed", "conversation", req.Conversation, "request", req.RequestID, "err", err)
		}
		return
	}
	if errors.Is(err, ErrAppsConversation) {
		// Not a failure to store: the conversation is an app's, where
		// the worker writes nothing.
		w.deadLetter(ctx, m, meta, w.names.ChatSubject(req.Conversation), fmt.Sprintf("%s; %v", reason, err))
		return
	}
	w.deadLetter(ctx, m, meta, w.names.ChatSubject(req.Conversation), fmt.Sprintf("%s; request.failed could not be stored either: %v", reason, err))
}

// lastDelivery is the partition consumers' MaxDeliver: JetStream does not
// deliver a request again after it, so whatever happens then, the request
// must end (request.failed, or a dead letter) rather than stay in the
// stream for ever.
func (w *Worker) lastDelivery() uint64 { return uint64(w.cfg.MaxDeliver + LostDeliveries) }

// straySweep is how often a worker looks for stray requests (see
// sweepStrays): one JetStream API call when there are none.
const straySweep = 5 * time.Second

// sweepStrays dead-letters, every straySweep until ctx ends, the requests
// the requests stream stored without a partition: those published on the
// literal subjects <prefix>.chat.* or <prefix>.chat.>, which its subject
// transform leaves as they are. No partition consumer's filter matches
// them, and no consumer could take them (a filter that matches a literal
// '>' overlaps every partition's, which a work queue refuses), so they
// would wait in the stream, unanswered, until they expire. A direct read
// of the last message on <prefix>.chat.* finds exactly these (stored
// requests of conversations have a partition token more); each is stored
// as a dead letter and then deleted. Two workers sweeping at once store
// one dead letter (see eventlog.AddDeadLetter).
func (w *Worker) sweepStrays(ctx context.Context) {
	t := time.NewTicker(straySweep)
	defer t.Stop()
	for {
		if err := w.deadLetterStrays(ctx); err != nil && ctx.Err() == nil {
			w.log.Debug("stray requests not swept", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// deadLetterStrays dead-letters the stray requests there are now.
func (w *Worker) deadLetterStrays(ctx context.Context) error {
	s, err := w.cfg.Log.JetStream().Stream(ctx, w.names.RequestsStream)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		m, err := s.GetLastMsgForSubject(ctx, w.names.ChatWildcard())
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		reason := fmt.Sprintf("the subject names no valid conversation: %s is a wildcard, not a conversation ID; publish on %s",
			m.Subject, w.names.ChatSubject("<conversation>"))
		if err := w.deadLetterStored(ctx, s, m, reason); err != nil {
			return err
		}
	}
	return ctx.Err()
}
