package gateway

import (
	"context"
	"sync"
	"time"
)

// erasuresKept is how long a conversation's erasure is kept in memory:
// longer than a call takes from being made to its input being recorded
// (recordTimeout, after its request went upstream).
const erasuresKept = 10 * time.Minute

// erasedLately are the conversations this process heard erased lately, with
// when each was erased.
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

// erasedAt is when conv was erased, as erase noted it (its note's time,
// the erasing process's clock), or now when the note cannot be read.
func (r *Recorder) erasedAt(conv string) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if at, ok, err := r.threads.ErasedAt(ctx, conv); err == nil && ok {
		return at
	}
	return time.Now()
}

// erasedAfterMade reports whether the call's conversation was erased after
// the call was made, as this process heard: the call belongs to what was
// erased, and is not recorded, even into a conversation a later call
// started anew under that name (counted as erased, and logged).
func (r *Recorder) erasedAfterMade(p *Pending) bool {
	at, ok := r.erased.since(p.conv)
	if !ok || !p.started.Before(at) {
		return false
	}
	r.erasedBeforeRecorded(p, p.conv, at)
	return true
}
