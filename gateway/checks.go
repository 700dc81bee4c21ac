package gateway

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

// checkers holds a check.Checker per conversation the gateway records,
// fed with the conversation's events in log order, so that each call is
// checked as it is recorded (replay --check's rules) at the cost of the
// call's own events. A conversation whose events the gateway did not all
// see (another gateway or a worker wrote some, or its checker was let go)
// has its checker rebuilt from the log. Like the Turn cache, a call takes
// its conversation's checker out and puts it back, so concurrent calls of
// one conversation never share one; it holds at most limit checkers.
type checkers struct {
	mu    sync.Mutex
	limit int
	order *list.List // of *fedChecker, most recent first
	byID  map[string]*list.Element
}

// fedChecker is a conversation's checker and how many of its events it
// was fed.
type fedChecker struct {
	conv string
	c    *check.Checker
	n    int
}

func newCheckers(limit int) *checkers {
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
	return el.Value.(*fedChecker)
}

func (cs *checkers) put(f *fedChecker) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if el, ok := cs.byID[f.conv]; ok {
		if el.Value.(*fedChecker).n >= f.n {
			return
		}
		cs.order.Remove(el)
	}
	cs.byID[f.conv] = cs.order.PushFront(f)
	for cs.order.Len() > cs.limit {
		el := cs.order.Back()
		cs.order.Remove(el)
		delete(cs.byID, el.Value.(*fedChecker).conv)
	}
}

// checkInput feeds a call's input step (evs, after the conversation's
// first atStart events) to the conversation's checker and returns the
// findings of the call, as finding.recorded payloads. The checker is
// handed back with the findings for fedOutcome.
func (r *Recorder) checkInput(ctx context.Context, conv, callID string, atStart int, evs []events.Event) (*fedChecker, []events.Payload, error) {
	f := r.checks.take(conv)
	if f == nil || f.n != atStart {
		var err error
		if f, err = r.rebuildChecker(ctx, conv, atStart); err != nil {
			return nil, nil, err
		}
	}
	var out []events.Payload
	for _, e := range evs {
		fs, err := f.c.Feed(e)
		if err != nil {
			return nil, nil, fmt.Errorf("check the call: %w", err)
		}
		f.n++
		for _, x := range fs {
			out = append(out, events.FindingRecorded{InferenceID: callID, Rule: string(x.Rule), Detail: x.Detail, Blocks: x.Blocks})
		}
	}
	return f, out, nil
}

// fedOutcome feeds the call's outcome step to its checker and keeps it,
// when the step followed the input at once (no other call's events in
// between: those would be unknown to it).
func (r *Recorder) fedOutcome(f *fedChecker, evs []events.Event, adjacent bool) {
	if f == nil || !adjacent {
		return
	}
	for _, e := range evs {
		if _, err := f.c.Feed(e); err != nil {
			return
		}
		f.n++
	}
	r.checks.put(f)
}

// rebuildChecker feeds a new checker the conversation's first n events.
func (r *Recorder) rebuildChecker(ctx context.Context, conv string, n int) (*fedChecker, error) {
	f := &fedChecker{conv: conv, c: check.New()}
	if n == 0 {
		return f, nil
	}
	el, ok := r.log.(eventsLog)
	if !ok {
		return nil, fmt.Errorf("check the call: the log cannot be read")
	}
	for rec, err := range el.Events(ctx, conv) {
		if err != nil {
			return nil, fmt.Errorf("check the call: %w", err)
		}
		if _, err := f.c.Feed(rec.Event); err != nil {
			return nil, fmt.Errorf("check the call: %w", err)
		}
		if f.n++; f.n == n {
			break
		}
	}
	if f.n != n {
		return nil, fmt.Errorf("check the call: the log holds %d events of %s before the call, not %d", f.n, conv, n)
	}
	return f, nil
}
