package worker

// This file holds how a request's steps reach the log (appender), and how
// the log's answers to them are told apart: refused, unreadable, or not
// answered at all.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// appender measures steps and runs the "step" fault point before each.
// With foreign set it stores steps under eventlog.ForeignStepID: for the
// failure of a request whose ID another conversation already used. With
// deltas set it publishes the text streamed so far before the step, so
// that live clients get it before the step's events.
type appender struct {
	w       *Worker
	foreign bool
	deltas  *deltaBatch
}

func (a appender) Append(ctx context.Context, conv string, expected uint64, evs ...events.Event) (uint64, error) {
	if a.deltas != nil {
		a.deltas.flush()
	}
	if err := a.w.fault("step"); err != nil {
		return 0, err
	}
	start := time.Now()
	appendStep := a.w.cfg.Log.Append
	if a.foreign {
		appendStep = a.w.cfg.Log.AppendForeignStep
	}
	seq, err := appendStep(ctx, conv, expected, evs...)
	a.w.metrics.stepSeconds.Observe(time.Since(start).Seconds())
	switch {
	case err == nil || ctx.Err() != nil:
	case errors.Is(err, eventlog.ErrStorageFull):
		// The server answered: no link to suspect. The request is held
		// until space is freed (see holdWhileFull), so to the chain it
		// is a step that will be retried, not a failed call.
		err = fmt.Errorf("%w: %w", errLogUnavailable, err)
	case errors.Is(err, eventlog.ErrConflict):
		err = fmt.Errorf("%w: %w", engine.ErrSuperseded, err)
	case !refused(err):
		a.w.link.suspect()
		err = fmt.Errorf("%w: %w", errLogUnavailable, err)
	}
	return seq, err
}

// errLogUnavailable marks an append that failed for want of a log, not
// because the log refused it: a timeout or no responder while a cluster
// elects a leader, a lost connection. The step may even have been stored.
// The request is retried later and resumes from what the log holds; ending
// it as request.failed would fail a request that can still succeed.
var errLogUnavailable = engine.ErrLogUnavailable

// unreadable reports whether err says the conversation's log cannot be
// folded (a corrupt message, an event the fold rejects): retrying cannot
// help.
func unreadable(err error) bool {
	return errors.Is(err, eventlog.ErrCorruptMessage) || errors.Is(err, eventlog.ErrUnappliable) || errors.Is(err, events.ErrInvalid) || errors.Is(err, projector.ErrMismatch)
}

// refused reports whether the log answered an append with a definite no.
func refused(err error) bool {
	return errors.Is(err, eventlog.ErrConflict) || errors.Is(err, eventlog.ErrCauseReused) ||
		errors.Is(err, eventlog.ErrStepExists) || errors.Is(err, eventlog.ErrTooLarge) ||
		errors.Is(err, events.ErrInvalid)
}
