package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/calls"
)

// A call forwarded while NATS is away has its file in the spool before it
// is forwarded: its request, and as outcome that the gateway stopped
// before it kept the call's answer. Its answer replaces that file once it
// ends (keep). A gateway killed in between leaves the file, and the call
// is recorded from it as failed, as a live call left open by a killed
// gateway is closed as abandoned: the provider did the call, and the
// record says so. Without it such a call left no trace anywhere.

// provisionalFailure is the outcome of a spooled call whose answer was
// never kept.
const provisionalFailure = "no outcome was recorded: the gateway stopped before it kept the call's answer in its spool (--record-optional, NATS away); whether the client got an answer is not known"

// provision writes c's file before c is forwarded, and notes c in flight
// (the drain leaves its file alone until keep has written it whole). An
// error refuses the call: it cannot be kept.
func (s *spool) provision(c *spoolCall) error {
	l := &calls.Logged{API: c.api, Compact: c.compact, Headers: c.headers, Time: c.at, Conversation: c.Conversation, Request: c.body, CallID: c.id,
		Threading: c.threading, Failure: provisionalFailure, Transient: true, Account: c.account}
	data := l.Marshal()
	s.mu.Lock()
	if s.released {
		s.used -= c.reserved
		s.m.spooled.Set(float64(s.used))
		s.mu.Unlock()
		return errors.New("the gateway is stopping, and its spool no longer takes calls")
	}
	s.inFlightCalls[c.id] = true
	s.mu.Unlock()
	if err := writeSynced(s.dir, c.id+".call", data); err != nil {
		s.mu.Lock()
		delete(s.inFlightCalls, c.id)
		s.used -= c.reserved
		s.m.spooled.Set(float64(s.used))
		s.mu.Unlock()
		return fmt.Errorf("keep the call in the spool %s: %w", s.dir, err)
	}
	c.provisional = int64(len(data))
	return nil
}

// forwarding reports whether the call of spool file name is in flight:
// its file is not whole yet.
func (s *spool) forwarding(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlightCalls[spoolID(name)]
}

// release refuses calls from now on, and gives up the spool's lock once
// no call it took in is in flight. A stopping gateway's server ends its
// calls after Run has returned: another gateway given the spool meanwhile
// would take their provisional files for a dead gateway's, and record
// calls whose answers reach their clients as failed.
//
// It refuses calls at once, not once they are whole: each call taken in
// meanwhile would be forwarded by a gateway that is stopping and put the
// release off until it ended, so that under steady traffic the spool was
// never let go.
func (s *spool) release() {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	s.mu.Lock()
	s.released = true
	s.mu.Unlock()
	for {
		s.mu.Lock()
		n := len(s.inFlightCalls)
		s.mu.Unlock()
		if n == 0 {
			s.lock.Close()
			return
		}
		<-t.C
	}
}
