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
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

// checkersShare is the share of Config.CacheBytes the worker's checkers
// may hold (check.Checker.Size): each holds its conversation's Turn, as
// the cache of Turns does.
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
		w.checkers.drop(conv)
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
	c := w.checkers.take(job.conv)
	if c == nil || c.n != job.at {
		var err error
		if c, err = w.rebuildChecker(ctx, job.conv, job.at); err != nil {
			return err
		}
	}
	for _, e := range job.evs {
		fs, err := c.c.Feed(e)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		c.n++
		w.metrics.findings.AddAll(fs)
	}
	w.checkers.put(c)
	return nil
}

// rebuildChecker feeds a new checker the conversation's first n events.
func (w *Worker) rebuildChecker(ctx context.Context, conv string, n int) (*fedChecker, error) {
	c := &fedChecker{conv: conv, c: check.New()}
	if n == 0 {
		return c, nil
	}
	for rec, err := range w.cfg.Log.Events(ctx, conv) {
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		if _, err := c.c.Feed(rec.Event); err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		if c.n++; c.n == n {
			break
		}
	}
	if c.n != n {
		return nil, fmt.Errorf("check: the log holds %d events of %s before the request's, not %d", c.n, conv, n)
	}
	return c, nil
}

// fedChecker is a conversation's checker, how many of its events it was
// fed, and its size when it was put back.
type fedChecker struct {
	conv string
	c    *check.Checker
	n    int
	size int64
}

// checkers holds the latest checkers, most recent first, of at most
// limit bytes in all (as check.Checker.Size estimates them).
type checkers struct {
	mu    sync.Mutex
	limit int64
	bytes int64
	order *list.List // of *fedChecker
	byID  map[string]*list.Element
}

func newCheckers(limit int64) *checkers {
	return &checkers{limit: limit, order: list.New(), byID: map[string]*list.Element{}}
}

func (cs *checkers) take(conv string) *fedChecker {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	el, ok := cs.byID[conv]
	if !ok {
		return nil
	}
	cs.order.Remove(el)
	delete(cs.byID, conv)
	c := el.Value.(*fedChecker)
	cs.bytes -= c.size
	return c
}

func (cs *checkers) drop(conv string) { cs.take(conv) }

// put keeps c (a checker taken out, or new), letting go of the least
// recently used ones past the limit; one larger than the limit alone is
// not kept (its conversation's next request rebuilds it).
func (cs *checkers) put(c *fedChecker) {
	c.size = int64(c.c.Size())
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c.size > cs.limit {
		return
	}
	if el, ok := cs.byID[c.conv]; ok {
		// Not expected (one checkLoop takes and puts), but never kept twice.
		cs.order.Remove(el)
		cs.bytes -= el.Value.(*fedChecker).size
	}
	cs.byID[c.conv] = cs.order.PushFront(c)
	cs.bytes += c.size
	for cs.bytes > cs.limit {
		el := cs.order.Back()
		cs.order.Remove(el)
		old := el.Value.(*fedChecker)
		delete(cs.byID, old.conv)
		cs.bytes -= old.size
	}
}
