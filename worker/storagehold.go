package worker

// This file holds how a request waits while JetStream's storage is full:
// in the worker's hands, its delivery not used up, until it can be stored.

import (
	"context"
	"errors"
	"time"

	"github.com/turnlog/turnlog/eventlog"
)

// storageRetry is how often a request held while JetStream's storage is
// full is tried again.
const storageRetry = time.Second

// holdWhileFull keeps a request whose outcome could not be stored because
// JetStream's storage is full (err matches eventlog.ErrStorageFull) in the
// worker's hands, trying it again every storageRetry until it ends
// (completed, or failed for a reason of its own) or the worker stops. Its
// delivery is not used up meanwhile: JetStream delivers a request a
// bounded number of times, and a request whose last delivery ended while
// nothing could be stored would be lost, neither answered nor failed nor
// dead-lettered. Writes pass again as soon as space is freed, and the
// request goes on from what the log holds. A worker told to stop hands the
// request back at once: no grace period can store what the storage
// refuses.
func (w *Worker) holdWhileFull(ctx context.Context, req Request, sent time.Time, problem string, lastTry bool, out outcome, err error) (outcome, error) {
	if !errors.Is(err, eventlog.ErrStorageFull) {
		return out, err
	}
	w.log.Warn("JetStream storage is full: request held until space is freed", "conversation", req.Conversation, "request", req.RequestID, "err", err)
	stopped, err := w.whileFull(ctx, err, func() error {
		var err error
		out, err = w.serve(ctx, req, sent, problem, lastTry, false)
		return err
	})
	if stopped {
		return handBack, err
	}
	w.log.Info("storage available again: held request went on", "conversation", req.Conversation, "request", req.RequestID)
	return out, err
}

// whileFull calls again every storageRetry while err matches
// eventlog.ErrStorageFull, counting each wait (turnlog_storage_full_total),
// until again stores or fails for a reason of its own, ctx ends or the
// worker is told to stop (stopped). It returns again's last error: what
// holdWhileFull and holdDeadLetter wait with.
func (w *Worker) whileFull(ctx context.Context, err error, again func() error) (stopped bool, _ error) {
	t := time.NewTicker(storageRetry)
	defer t.Stop()
	stopping := context.Background().Done()
	if w.intake != nil {
		stopping = w.intake.Done()
	}
	for errors.Is(err, eventlog.ErrStorageFull) {
		w.metrics.storageFull.Inc()
		select {
		case <-ctx.Done():
			return true, err
		case <-stopping:
			return true, err
		case <-t.C:
		}
		err = again()
	}
	return false, err
}
