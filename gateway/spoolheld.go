package gateway

import (
	"time"
)

// A spooled call of a conversation whose log is damaged cannot be
// recorded until a person repairs the conversation (turnlog repair). It
// waits in the spool, with the calls of that conversation after it (their
// order holds), while the calls of other conversations are recorded: one
// damaged conversation must not hold up the whole spool, and with it
// every call the gateway takes (they go to the spool while it is not
// empty, until it is full and they are answered 503).

// heldRetry is how often the drain looks again at a conversation it found
// damaged: each look reads the conversation's log.
const heldRetry = 10 * time.Second

// heldConversations are the conversations whose spooled calls wait for a
// repair, with when each was last found damaged. Only the drain uses it.
type heldConversations map[string]time.Time

// waits reports whether conv's calls wait still (found damaged less than
// heldRetry before now).
func (h heldConversations) waits(conv string, now time.Time) bool {
	at, ok := h[conv]
	return ok && now.Sub(at) < heldRetry
}

// hold notes conv found damaged at now, and reports whether it was not
// held before (to be said then, once).
func (h heldConversations) hold(conv string, now time.Time) (first bool) {
	_, held := h[conv]
	h[conv] = now
	return !held
}

// hold reports whether err, met recording spooled call name of conv,
// says conv's log is damaged: the call then waits, said once (an error,
// with what repairs it) and counted.
func (s *spool) hold(r *Recorder, name, conv string, err error) bool {
	if !unfoldable(err) {
		return false
	}
	if s.held.hold(conv, time.Now()) {
		r.metrics.errors.WithLabelValues("quarantined").Inc()
		r.logger.Error("gateway: a spooled call waits in the spool until its conversation is repaired; the calls of other conversations are recorded meanwhile",
			"conversation", conv, "file", name, "err", err)
	}
	return true
}
