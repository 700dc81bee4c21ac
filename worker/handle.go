package worker

// This file holds how one request message is handled: from delivery to
// ack, nak or hand-back, through the steps the request appends.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/tracing"
)

// outcome is what happens to a request message after handling.
type outcome int

const (
	ack outcome = iota
	retryLater
	handBack
	drop       // a simulated crash: neither ack nor nak
	deadLetter // not the worker's to answer: kept as a dead letter
)

// maxRetryDelay bounds the delay before a request that will be retried is
// delivered again: a request retried because the log did not answer (an
// election, which takes a few seconds) is tried again within this of the
// log coming back.
const maxRetryDelay = time.Second

// ErrConversationErased is why a request is dropped without a trace in
// the log: its conversation was erased after the request was sent (it was
// on its way, or in progress, when the erasure came), and writing it would
// bring the erased conversation back. Worker.Serve returns it.
var ErrConversationErased = errors.New("the conversation was erased after the request was sent")

// errCrash is returned when a fault point fired.
var errCrash = errors.New("simulated crash")

func (w *Worker) fault(point string) error {
	if w.cfg.Fault == nil {
		return nil
	}
	if err := w.cfg.Fault(point); err != nil {
		return fmt.Errorf("%w at %s: %v", errCrash, point, err)
	}
	return nil
}

func (w *Worker) handle(ctx context.Context, m jetstream.Msg) {
	w.inflight.Add(1)
	defer w.inflight.Done()
	w.metrics.inFlight.Inc()
	defer w.metrics.inFlight.Dec()

	meta, err := m.Metadata()
	if err != nil {
		w.log.Error("request without metadata", "err", err)
		_ = m.Term()
		return
	}
	if meta.NumDelivered > 1 {
		w.metrics.redeliveries.Inc()
	}
	conv := w.names.ConversationOf(m.Subject())
	if err := events.ValidateConversationID(conv); err != nil {
		// No valid conversation to record a failure in (a publish on the
		// literal turnlog.chat.* or turnlog.chat.>, say).
		w.deadLetter(ctx, m, meta, w.names.ChatSubject(conv), "the subject names no valid conversation: "+err.Error())
		return
	}
	req, problem := parseRequest(m.Data(), conv, meta.Sequence.Stream, meta.Timestamp, w.cfg.MaxTextBytes)
	lastTry := meta.NumDelivered >= uint64(w.cfg.MaxDeliver)

	// Continue the sender's trace, if its message carried one: the model
	// calls' spans nest under this request's.
	ctx, span := tracing.StartRequest(tracing.Extract(ctx, m.Headers()), conv, req.RequestID)
	defer span.End(nil)

	// Keep the request ours while it runs.
	stopAlive := w.progress.hold(m)
	out, err := w.serve(ctx, req, meta.Timestamp, problem, lastTry, meta.NumDelivered == 1)
	out, err = w.holdWhileFull(ctx, req, meta.Timestamp, problem, lastTry, out, err)
	stopAlive()
	if (out == retryLater || out == handBack) && meta.NumDelivered >= w.lastDelivery() && !errors.Is(err, eventlog.ErrStorageFull) {
		// JetStream will not deliver it again: end it now.
		w.endLastDelivery(ctx, m, meta, req, err)
		return
	}

	log := func() *slog.Logger {
		return w.log.With("conversation", conv, "request", req.RequestID, "delivery", meta.NumDelivered)
	}
	switch out {
	case ack:
		w.handled.Add(1)
		// Not a double ack: waiting for the server's word would only
		// tell of an ack lost on the way, and then the request is
		// complete in the log, where its redelivery sees that and just
		// acknowledges. The next request of the partition waits for
		// the server to take this ack (one request in flight) either
		// way.
		if err := m.Ack(); err != nil {
			log().Warn("ack failed", "err", err)
		}
	case retryLater:
		w.metrics.requests.WithLabelValues("retried").Inc()
		log().Info("request will be retried", "err", err)
		// The delay holds the partition (one request in flight), so it
		// stays within a few seconds whatever the delivery count.
		_ = m.NakWithDelay(min(time.Duration(meta.NumDelivered)*500*time.Millisecond, maxRetryDelay))
	case handBack:
		w.metrics.requests.WithLabelValues("handed_back").Inc()
		log().Info("request handed back", "err", err)
		_ = m.Nak()
	case drop:
		log().Warn("request dropped", "err", err)
	case deadLetter:
		w.deadLetter(ctx, m, meta, w.names.ChatSubject(conv), err.Error())
	}
}

// serve runs a request to its end, retrying on conflicts: another writer
// moved the conversation, so reload and resume from the log. A first
// delivery starts optimistically from the cached Turn (see start). sent
// is when the request was stored (the server's time; see start).
func (w *Worker) serve(ctx context.Context, req Request, sent time.Time, problem string, lastTry, firstDelivery bool) (outcome, error) {
	for attempt := 0; ; attempt++ {
		out, err := w.serveOnce(ctx, req, sent, problem, lastTry, firstDelivery && attempt == 0)
		if errors.Is(err, eventlog.ErrConflict) && attempt < 10 {
			// The cached Turn is still a state the log went through: the
			// next attempt brings it up to date from the log (see load).
			w.metrics.conflicts.Inc()
			continue
		}
		return out, err
	}
}

// start returns the Turn a request starts from and the step of its next
// event.
//
// On a first delivery with the conversation cached, and the cache not
// ending with this very request, nobody can have started the request, so
// the cached Turn is used as it is: if the log moved on meanwhile, the
// first append's expected-sequence check refuses it with ErrConflict and
// serve starts again from the log. Otherwise (a redelivery, nothing
// cached) the log's last message says whether the request is done, half
// done (resume after its last step) or new.
//
// A conversation the log holds nothing of may have been erased while
// the request was on its way or in progress (its next step was then
// refused, and serve came back here): a request stored before the
// erasure belongs to what was erased, and start returns
// ErrConversationErased instead of letting it write the conversation
// back.
func (w *Worker) start(ctx context.Context, req Request, sent time.Time, optimistic bool) (turn *projector.Turn, step int, open []events.Event, earlier earlierCalls, done bool, err error) {
	conv := req.Conversation
	if optimistic {
		if t, cause := w.cache.take(conv); t != nil {
			if cause != req.RequestID {
				w.metrics.cacheLoads.Inc()
				return t, 0, nil, earlier, false, nil
			}
			w.cache.put(t, cause) // this very request wrote it: see below
		}
	}
	tail, err := w.cfg.Log.Last(ctx, conv)
	if err != nil {
		return nil, 0, nil, earlier, false, err
	}
	if tail.Seq == 0 && !sent.IsZero() {
		erased, err := w.cfg.Log.ErasedAfter(ctx, conv, sent)
		if err != nil {
			return nil, 0, nil, earlier, false, err
		}
		if erased {
			return nil, 0, nil, earlier, false, ErrConversationErased
		}
	}
	resume := tail.Seq > 0 && ownStep(tail, req.RequestID)
	if !resume {
		// The HTTP API and turnlog chat ask this before they send; a
		// request published by another NATS client, or one that lost
		// the race with the app's next call, is stopped here.
		err := w.notTakenOver(ctx, req, sent, tail)
		if taken := (*takenOverError)(nil); errors.As(err, &taken) && taken.own.Closed() {
			return nil, 0, nil, earlier, true, nil // finished before the app's call; only the ack was lost
		}
		if err != nil {
			return nil, 0, nil, earlier, false, err
		}
	}
	if resume && tail.Closed() {
		return nil, 0, nil, earlier, true, nil // finished before; only the ack was lost
	}
	if resume {
		step = tail.Step + 1
		open = events.OpenCalls(tail.Events)
		if earlier, err = w.earlierCalls(ctx, conv, tail); err != nil {
			return nil, 0, nil, earlier, false, err
		}
	}
	turn, err = w.load(ctx, conv, tail.Seq)
	return turn, step, open, earlier, false, err
}

func (w *Worker) serveOnce(ctx context.Context, req Request, sent time.Time, problem string, lastTry, optimistic bool) (outcome, error) {
	conv := req.Conversation
	turn, step, open, earlier, done, err := w.start(ctx, req, sent, optimistic)
	if done {
		return ack, nil
	}
	if errors.Is(err, ErrConversationErased) {
		w.metrics.requests.WithLabelValues("erased").Inc()
		w.log.Warn("request dropped: its conversation was erased after it was sent; nothing of it is written",
			"conversation", conv, "request", req.RequestID)
		return ack, err
	}
	resume := step > 0
	var taken *takenOverError
	if errors.As(err, &taken) {
		return w.endTakenOver(ctx, req, taken)
	}
	if errors.Is(err, ErrAppsConversation) {
		// Nothing is written into the app's record, not even a failure:
		// the app's next call would show it as a rewritten history.
		return deadLetter, err
	}
	if err != nil {
		if unreadable(err) {
			// The log itself cannot be folded: no retry will help. The
			// request ends as request.failed all the same, after the
			// log's last message, saying which message is at fault.
			tx := engine.NewTx(projector.New(conv), req.RequestID)
			if !resume && problem == "" {
				_ = tx.Emit(ActorWorker, events.UserAppended{BlockID: engine.NewID(), Text: req.Text})
			}
			if problem == "" {
				problem = err.Error()
			}
			return w.fail(ctx, tx, problem)
		}
		return retryLater, err
	}
	name, ok := w.servingProfile(req)
	p := w.profiles[name]
	if problem == "" && !ok {
		problem = fmt.Sprintf("unknown profile %q; this worker has %s", truncate(name, 40), strings.Join(w.cfg.Profiles.Names(), ", "))
	}
	if p == nil {
		p = w.profiles[profile.DefaultName]
	}
	if ok {
		// The request's outcome names it, failed or not (failAs reads it
		// here): replay --rerun re-runs the request with this profile.
		ctx = withProfile(ctx, name)
	}
	if problem == "" {
		if err := middlewares.CheckRequestData(req.Data, p.AllowRequestData); err != nil {
			// Checked before anything is recorded: the data never reaches
			// the Turn, and the reason is the request's failure.
			problem = err.Error()
		}
	}
	model := req.Model
	if model == "" {
		model = p.Model
	}
	turnEventsAtStart, seqAtStart := turn.Events, turn.Seq
	deltas := w.deltas(conv, req.RequestID)
	defer deltas.flush()
	tx := engine.NewTx(turn, req.RequestID,
		engine.WithLog(appender{w: w, deltas: deltas}),
		engine.WithStep(step),
		engine.WithModel(model),
		engine.WithTools(p.Tools.Specs()...),
		engine.WithDelta(deltas.add),
		engine.WithAnswerOpen())
	deltas.stepOf = tx.Step
	// The crash came during these model calls: they never answered, and
	// the request makes them again.
	if err := closeInterrupted(tx, open, "the request was delivered again and resumed"); err != nil {
		return w.fail(ctx, tx, err.Error())
	}
	if problem != "" {
		return w.fail(ctx, tx, problem)
	}
	if !resume {
		if err := w.fault("user"); err != nil {
			return drop, err
		}
		if err := tx.Emit(ActorWorker, events.UserAppended{BlockID: engine.NewID(), Text: req.Text}); err != nil {
			return w.fail(ctx, tx, err.Error())
		}
		if len(req.Data) > 0 {
			if err := tx.Emit(ActorWorker, events.DataSet{Values: req.Data}); err != nil {
				return w.fail(ctx, tx, err.Error())
			}
		}
		// Not committed on its own: the request's input lands in one step
		// with the middlewares' changes and inference.started, and its
		// answer in one step with request.completed. A crash before the
		// first append leaves nothing; the redelivery starts afresh.
	}
	loop := p.Loop
	loop.Made = earlier.answered // a resumed request's answered calls count against its limit
	if err := loop.Run(ctx, tx); err != nil {
		if optimistic && len(tx.Committed()) == 0 && ctx.Err() == nil && !errors.Is(err, errCrash) {
			// The chain refused a Turn taken from the cache before
			// anything was stored, so no append could say that the log
			// had moved on (another worker, a repair): make sure before
			// failing the request over a Turn that may be no more.
			if last, lerr := w.cfg.Log.LastSeq(ctx, conv); lerr == nil && last != seqAtStart {
				return retryLater, &eventlog.ConflictError{Conversation: conv, Expected: seqAtStart, Actual: last}
			}
		}
		if pe := (*engine.PanicError)(nil); errors.As(err, &pe) {
			// A bug in a middleware or an engine: the request fails with
			// the panic's value; its stack is for the operator.
			w.log.Error("a middleware or engine panicked; the request fails", "conversation", conv, "request", req.RequestID,
				"profile", name, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		}
		// The profile's name goes with the reason: a middleware's remedy
		// ("list ... in the profile's middlewares") names a setting of it.
		return w.afterError(ctx, tx, fmt.Errorf("profile %q: %w", name, err), lastTry)
	}
	if err := tx.Emit(ActorWorker, events.RequestCompleted{Inferences: earlier.started + tx.ModelCalls(), Profile: name}); err != nil {
		return retryLater, err
	}
	if err := tx.Commit(ctx); err != nil {
		return w.afterError(ctx, tx, err, lastTry)
	}
	w.snapshot(ctx, tx, turnEventsAtStart)
	w.queueCheck(conv, turnEventsAtStart, tx.Committed())
	w.cache.put(tx.Turn(), req.RequestID)
	if err := w.fault("completed"); err != nil {
		return drop, err
	}
	w.metrics.completed.Inc()
	return ack, nil
}
