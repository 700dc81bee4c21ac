package gateway

import (
	"sync"
	"time"
)

// erasuresKept is how long a conversation's erasure is kept in memory:
// longer than a call takes from being made to its input being recorded
// (recordTimeout, after its request went upstream).
const erasuresKept = 10 * time.Minute

// erasedLately are the conversations this process heard erased lately, with
// when it heard it (its own clock).
type erasedLately struct {
	mu sync.Mutex
	at map[string]time.Time
}

// note keeps that conv was erased at at, and lets go of those erased
// longer ago than erasuresKept.
func (e *erasedLately) note(conv string, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.at == nil {
		e.at = map[string]time.Time{}
	}
	for c, t := range e.at {
		if time.Since(t) > erasuresKept {
			delete(e.at, c)
		}
	}
	e.at[conv] = at
}

// since reports when conv was erased, if this process heard it lately.
func (e *erasedLately) since(conv string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.at[conv]
	return t, ok
}

// erasedAfterMade reports whether this process heard the call's
// conversation erased after the call was made: the call belongs to what
// was erased, and is not recorded, even into a conversation a later call
// started anew under that name (counted as erased, and logged). A call
// made between the erasure and the moment this process heard of it
// (milliseconds) is taken as made before.
func (r *Recorder) erasedAfterMade(p *Pending) bool {
	at, ok := r.erased.since(p.conv)
	if !ok || !p.started.Before(at) {
		return false
	}
	r.erasedBeforeRecorded(p, p.conv, at)
	return true
}
