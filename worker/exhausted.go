package worker

// This file holds how a request JetStream stopped delivering ends all the
// same. A request whose handling stops the worker every time (an engine
// that runs the process out of memory, a supervisor's kill) is never
// acknowledged, negatively or otherwise, so the worker's own last-delivery
// rule (endLastDelivery) never runs: after the consumer's last delivery the
// server gives up on it, and it would wait in the requests stream, without
// an answer or a record, until it expired. JetStream announces that moment
// with an advisory; a worker hearing it ends the request as request.failed
// in its conversation and deletes it from the stream. A sweep finds those
// whose advisory no worker heard (none was running then).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// exhaustedSweep is how often a worker looks for requests JetStream gave
// up on that no worker ended (see sweepExhausted): one JetStream API call
// when the requests stream is empty.
const exhaustedSweep = time.Minute

// exhaustedQueue is the queue group the workers hear JetStream's
// max-deliveries advisories in: one worker ends each request.
const exhaustedQueue = "turnlog-workers"

// MaxDeliveriesAdvisory is the subject on which JetStream announces that
// a partition consumer of requests stream will not deliver a request
// again (nats-server's max_deliver advisory).
func MaxDeliveriesAdvisory(requestsStream string) string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + requestsStream + ".*"
}

// maxDeliveries is the part of the advisory the worker reads.
type maxDeliveries struct {
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// followExhausted ends, until ctx ends, the requests JetStream announces
// it gave up on, and every exhaustedSweep those no worker heard of.
func (w *Worker) followExhausted(ctx context.Context) {
	heard := make(chan maxDeliveries, 64)
	sub, err := w.cfg.Conn.QueueSubscribe(MaxDeliveriesAdvisory(w.names.RequestsStream), exhaustedQueue, func(m *nats.Msg) {
		var a maxDeliveries
		if err := json.Unmarshal(m.Data, &a); err != nil || a.StreamSeq == 0 || !w.ownConsumer(a.Consumer) {
			return // another consumer's, or not an advisory at all
		}
		select {
		case heard <- a:
		default: // the sweep finds it
		}
	})
	if err != nil {
		w.log.Warn("JetStream's max-deliveries advisories not followed; requests it gives up on are ended by the sweep, every "+exhaustedSweep.String(), "err", err)
	} else {
		defer sub.Unsubscribe()
	}
	t := time.NewTicker(exhaustedSweep)
	defer t.Stop()
	if err := w.sweepExhausted(ctx); err != nil && ctx.Err() == nil {
		w.log.Debug("requests JetStream gave up on not swept", "err", err)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-heard:
			if err := w.endExhausted(ctx, a.StreamSeq, a.Deliveries); err != nil && ctx.Err() == nil {
				w.log.Warn("a request JetStream gave up on was not ended yet; the sweep tries again", "request_seq", a.StreamSeq, "err", err)
			}
		case <-t.C:
			if err := w.sweepExhausted(ctx); err != nil && ctx.Err() == nil {
				w.log.Debug("requests JetStream gave up on not swept", "err", err)
			}
		}
	}
}

// ownConsumer reports whether name is one of the workers' partition
// consumers.
func (w *Worker) ownConsumer(name string) bool {
	for p := 0; p < w.cfg.Log.Partitions(); p++ {
		if name == ConsumerName(w.names, p) {
			return true
		}
	}
	return false
}

// sweepExhausted ends the requests JetStream gave up on that are still in
// the requests stream: a request of a partition whose consumer delivered
// past it and holds nothing unacknowledged was neither acknowledged nor
// terminated (either deletes it from the work queue), so its deliveries
// ran out.
func (w *Worker) sweepExhausted(ctx context.Context) error {
	js := w.cfg.Log.JetStream()
	s, err := js.Stream(ctx, w.names.RequestsStream)
	if err != nil {
		return err
	}
	if s.CachedInfo().State.Msgs == 0 {
		return nil
	}
	for p := 0; p < w.cfg.Log.Partitions() && ctx.Err() == nil; p++ {
		m, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(w.names.ChatPartition(p)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		c, err := js.Consumer(ctx, w.names.RequestsStream, ConsumerName(w.names, p))
		if err != nil {
			continue // not consumed yet: nothing was given up on
		}
		info := c.CachedInfo()
		if info.NumAckPending > 0 || m.Sequence > info.Delivered.Stream {
			continue // in hand, or not delivered yet
		}
		if err := w.endExhausted(ctx, m.Sequence, 0); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// endExhausted ends the request at seq of the requests stream, which
// JetStream delivered deliveries times (0: unknown) and will not deliver
// again: as request.failed in its conversation (after whatever of it the
// log holds, with the user's text if nothing), or as a dead letter when
// that cannot be; then it deletes the request from the stream. A request
// the log shows ended (its ack was what got lost) is only deleted.
func (w *Worker) endExhausted(ctx context.Context, seq, deliveries uint64) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := w.cfg.Log.JetStream().Stream(ctx, w.names.RequestsStream)
	if err != nil {
		return err
	}
	// As the stream holds it: a replica or mirror that lacks it would have
	// the request end without a word.
	m, err := w.cfg.Log.MessageAt(ctx, s, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // ended already
	}
	if err != nil {
		return err
	}
	times := "all its deliveries"
	if deliveries > 0 {
		times = fmt.Sprintf("%d deliveries", deliveries)
	}
	reason := fmt.Sprintf("gave up after %s: the worker handling it stopped each time (it crashed, was killed or ran out of memory) before the request ended, and JetStream does not deliver it again; the worker's log at those times says why", times)
	conv := w.names.ConversationOf(m.Subject)
	if err := events.ValidateConversationID(conv); err != nil {
		return w.deadLetterStored(ctx, s, m, reason+"; the subject names no valid conversation: "+err.Error())
	}
	req, problem := parseRequest(m.Data, conv, m.Sequence, m.Time, w.cfg.MaxTextBytes)
	ended, err := w.failExhausted(ctx, req, m.Time, problem, reason)
	if err != nil {
		w.log.Warn("request.failed not stored for a request JetStream gave up on", "conversation", conv, "request", req.RequestID, "err", err)
		return w.deadLetterStored(ctx, s, m, fmt.Sprintf("%s; request.failed could not be stored: %v", reason, err))
	}
	if ended {
		w.log.Warn("request failed: JetStream gave up on it", "conversation", conv, "request", req.RequestID, "reason", reason)
	}
	if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return err
	}
	return nil
}

// failExhausted records request.failed for req with reason, after what
// the log holds of it (its open model calls closed as never answered).
// It reports false when there was nothing to record: the log shows the
// request ended, or its conversation was erased after it was sent.
func (w *Worker) failExhausted(ctx context.Context, req Request, sent time.Time, problem, reason string) (bool, error) {
	turn, step, open, _, done, err := w.start(ctx, req, sent, false)
	var taken *takenOverError
	switch {
	case done, errors.Is(err, ErrConversationErased):
		return false, nil
	case errors.As(err, &taken):
		// An app's call landed after its last step: it ends there, as a
		// request a worker finds so ends.
		if out, err := w.endTakenOver(ctx, req, taken); out != ack {
			if err == nil {
				err = errors.New("the log did not take it")
			}
			return false, err
		}
		return true, nil
	case err != nil && unreadable(err):
		turn, step, open = projector.New(req.Conversation), 0, nil
	case err != nil:
		return false, err
	}
	tx := engine.NewTx(turn, req.RequestID, engine.WithLog(appender{w: w}), engine.WithStep(step))
	if err := closeInterrupted(tx, open, "JetStream then gave up on the request"); err != nil {
		return false, err
	}
	if step == 0 && problem == "" {
		if err := tx.Emit(ActorWorker, events.UserAppended{BlockID: engine.NewID(), Text: req.Text}); err != nil {
			return false, err
		}
	}
	if out, err := w.fail(ctx, tx, reason); out != ack {
		if err == nil {
			err = errors.New("the log did not take it")
		}
		return false, err
	}
	return true, nil
}

// closeInterrupted closes the model calls a stopped worker left open: they
// never answered. then says what became of the request.
func closeInterrupted(tx *engine.Tx, open []events.Event, then string) error {
	for _, e := range open {
		st := e.Payload.(events.InferenceStarted)
		// Its duration unknown (0): the time until now is the outage's,
		// not the call's.
		if err := tx.Emit(ActorWorker, events.InferenceFailed{InferenceID: st.InferenceID, Transient: true,
			Error: "no outcome was recorded: the worker making the call stopped before the model answered; " + then}); err != nil {
			return err
		}
	}
	return nil
}

// deadLetterStored stores the request m of the requests stream s as a dead
// letter with reason, then deletes it from s.
func (w *Worker) deadLetterStored(ctx context.Context, s jetstream.Stream, m *jetstream.RawStreamMsg, reason string) error {
	// The subject the request was published on, as every other dead
	// letter names it (and senders look for it), not the requests
	// stream's partition subject it is stored under.
	subject := w.names.ChatSubject(w.names.ConversationOf(m.Subject))
	d := eventlog.DeadLetter{Subject: subject, Reason: reason, Received: m.Time.UTC(), RequestSeq: m.Sequence, Worker: w.cfg.Name,
		Headers: m.Header, Data: m.Data, ServedAs: w.servedAs(m.Data, subject, m.Sequence, m.Time)}
	switch err := w.cfg.Log.AddDeadLetter(ctx, d); {
	case errors.Is(err, eventlog.ErrConversationErased):
		// It belongs to what was erased: dropped, as the erasure would have.
		w.metrics.requests.WithLabelValues("erased").Inc()
		w.log.Warn("request dropped: its conversation was erased after it was sent; no dead letter is kept", "subject", m.Subject, "request_seq", m.Sequence)
	case err != nil:
		return err
	default:
		w.metrics.deadLetters.Inc()
		w.metrics.requests.WithLabelValues("dead_lettered").Inc()
		w.log.Warn("request dead-lettered", "subject", m.Subject, "request_seq", m.Sequence, "reason", reason)
	}
	if err := s.DeleteMsg(ctx, m.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return err
	}
	return nil
}
