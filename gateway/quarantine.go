package gateway

// A conversation whose log cannot be folded (a damaged step, one whose
// events do not apply) can record no call until a person repairs it. Its
// calls are answered so, in the API's error shape, instead of being
// forwarded and then cut.

import (
	"context"
	"errors"
	"sync"

	"github.com/turnlog/turnlog/eventlog"
)

// unfoldable reports whether err says a conversation's log cannot be
// folded: no retry helps, `turnlog repair` does.
func unfoldable(err error) bool {
	return errors.Is(err, eventlog.ErrCorruptMessage) || errors.Is(err, eventlog.ErrUnappliable)
}

// maxQuarantined bounds how many damaged conversations a gateway keeps in
// mind: past it, one is forgotten (and its next call forwarded, found
// damaged and kept again).
const maxQuarantined = 10000

// quarantined is the set of conversations a call of which found their log
// damaged: a later call naming one is checked against the log before
// anything is forwarded.
type quarantined struct {
	mu    sync.Mutex
	convs map[string]struct{}
}

func (q *quarantined) add(conv string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.convs == nil {
		q.convs = map[string]struct{}{}
	}
	if len(q.convs) >= maxQuarantined {
		for c := range q.convs {
			delete(q.convs, c)
			break
		}
	}
	q.convs[conv] = struct{}{}
}

func (q *quarantined) has(conv string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.convs[conv]
	return ok
}

func (q *quarantined) remove(conv string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.convs, conv)
}

// stillDamaged returns why conv, found damaged before, still cannot record
// a call, or nil when it can (it was repaired or erased since; a log that
// does not answer is for the call's own recording to find).
func (r *Recorder) stillDamaged(ctx context.Context, conv string) error {
	if !r.quarantined.has(conv) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	_, err := r.log.Load(ctx, conv)
	if unfoldable(err) {
		return err
	}
	if err == nil {
		r.quarantined.remove(conv)
	}
	return nil
}

// inputRecorded waits for the call's input to be recorded, and returns
// why it could not be (nil when it was, or when the conversation was
// erased meanwhile: the app keeps its answer). The upstream's answer waits
// for it before it goes on to the app, which costs nothing where the
// upstream takes longer than the log (the input is recorded while it
// works): an answer the log could not hold is withheld with the reason,
// not cut at its end.
func (p *Pending) inputRecorded(ctx context.Context) error {
	if p.inputDone == nil {
		return nil
	}
	select {
	case <-p.inputDone:
		return p.inputErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errUnrecorded is a call whose input could not be recorded while the
// upstream worked (its conversation damaged, the log unreachable): its
// answer is withheld, as the log could not hold it, and the app told why.
type errUnrecorded struct{ err error }

func (e errUnrecorded) Error() string { return e.err.Error() }
func (e errUnrecorded) Unwrap() error { return e.err }
