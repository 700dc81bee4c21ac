package worker

// This file counts the findings of replay --check's rules (package check)
// on the model calls this worker makes, in turnlog_findings_total{rule},
// as the recording gateway counts its calls'. A checker per conversation
// is fed the events this worker committed; one that missed events (another
// worker served the conversation meanwhile, an operator changed it, the
// checker was let go) is rebuilt from the log. All of it runs beside the
// requests, never in their way: a request's events that cannot be queued
// are not checked (and that conversation's checker is let go, to be
// rebuilt), and replay --check, ls and the console check every call from
// the log whatever this count says.

import (
	"context"
	"fmt"

	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// checkersShare is the share of Config.CacheBytes the worker's checkers
// may hold (check.Cache): each holds its conversation's Turn, as the
// cache of Turns does.
const checkersShare = 4

// checkJob is what a request committed: its events, after the
// conversation's first at events.
type checkJob struct {
	conv string
	at   int
	evs  []events.Event
}

// queueCheck hands a request's committed events to checkLoop.
func (w *Worker) queueCheck(conv string, at int, evs []events.Event) {
	if len(evs) == 0 {
		return
	}
	select {
	case w.checks <- checkJob{conv: conv, at: at, evs: evs}:
	default:
		w.checkers.Take(conv) // let go: the next request rebuilds it
	}
}

// checkLoop checks the queued requests' calls until ctx ends.
func (w *Worker) checkLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-w.checks:
			if err := w.check(ctx, job); err != nil {
				w.log.Debug("calls not checked", "conversation", job.conv, "err", err)
			}
		}
	}
}

// check feeds job's events to its conversation's checker (rebuilt from
// the log when it is not where the job starts) and counts the findings
// of the calls among them: this worker's.
func (w *Worker) check(ctx context.Context, job checkJob) error {
	f := w.checkers.Take(job.conv)
	if f == nil || f.Events != job.at {
		var err error
		if f, err = check.Rebuild(job.conv, job.at, eventlog.EventsOnly(w.cfg.Log.Events(ctx, job.conv))); err != nil {
			return err
		}
	}
	for _, e := range job.evs {
		fs, err := f.Feed(e)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		w.metrics.findings.AddAll(fs)
	}
	w.checkers.Put(f)
	return nil
}
