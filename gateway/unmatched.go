package gateway

import (
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// Calls whose history matches no recorded call: an app that trims the
// answers it re-sends, keeps a sliding window, re-serialises tool
// arguments or puts the time in its system prompt sends an input that
// begins with no recorded call's state, so each of its calls starts a
// conversation of its own (docs/gateway.md, Threading). Nothing in the
// record is wrong, but one app chat becomes many conversations; the
// gateway says so, in a metric and in its log, with the remedy.

// threadingUnmatched is the threading label of a new conversation whose
// input re-sends what a model wrote.
const threadingUnmatched = "unmatched"

// unmatchedEvery is how often, at most, the gateway logs such a call: an
// app that does it does it on every call.
const unmatchedEvery = time.Minute

// threaded counts a call whose input was recorded by how it was threaded,
// and logs (at most once a minute) one whose history matched no recorded
// call.
func (r *Recorder) threaded(p *Pending) {
	threading := p.threading
	if threading == calls.ThreadNew && p.call.Request != nil && resendsModelOutput(p.call.Request.RequestBlocks()) {
		threading = threadingUnmatched
		if r.mayLogUnmatched() {
			r.logger.Warn("gateway: a call re-sends model output that matches no recorded call, so it starts a new conversation (does the app trim or re-serialise the answers it re-sends, keep a sliding window, or change its system prompt?); send the Turnlog-Conversation header to keep an app chat in one conversation (docs/gateway.md, Threading); said at most once a minute",
				"conversation", p.conv, "api", string(p.call.API))
		}
	}
	if r.metrics != nil {
		r.metrics.threading.WithLabelValues(string(p.call.API), string(threading)).Inc()
	}
}

// mayLogUnmatched reports whether a minute has passed since the last
// unmatched call was logged, and marks now.
func (r *Recorder) mayLogUnmatched() bool {
	now := time.Now().UnixNano()
	last := r.unmatchedLogged.Load()
	return now-last >= int64(unmatchedEvery) && r.unmatchedLogged.CompareAndSwap(last, now)
}

// resendsModelOutput reports whether an input holds a block a model
// writes: text of the assistant, a tool call, reasoning.
func resendsModelOutput(blocks []events.Block) bool {
	for _, b := range blocks {
		if calls.ModelOutput(b.Kind) {
			return true
		}
	}
	return false
}
