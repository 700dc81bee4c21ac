package worker

// This file holds how a request's token deltas are coalesced before they
// go out on turnlog.delta.<conversation>.

import (
	"sync"
	"time"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// DeltaWindow is the longest a streamed piece of text waits before it is
// published: a delta that comes after a quiet spell of at least this long
// goes out at once, and those that follow within it go out together at its
// end. A provider streams a message per token and the scripted engine one
// per word, while a reader sees no difference below a screen refresh or
// two; every message costs a publish in the worker and a routing in the
// server, which the profile of `turnlog bench --workers` showed at about a
// tenth of a request's CPU with one publish per word.
const DeltaWindow = 20 * time.Millisecond

// maxDeltaBytes is how much text a batch holds before it goes out whatever
// the time: far under any server's maximum message size.
const maxDeltaBytes = 16 << 10

// deltaBatch coalesces one request's deltas: consecutive pieces of the
// same kind become one Delta whose text is theirs joined, so a client that
// appends the texts in order shows the same answer. The batch goes out at
// the end of DeltaWindow, when the kind changes, and before each of the
// request's steps is appended (flush): a client never gets a step's events
// before the text that led to them. It is safe for concurrent use: the
// window's timer publishes from its own goroutine.
type deltaBatch struct {
	// publish sends a delta's JSON; it must not keep data, which is
	// reused.
	publish func(data []byte)
	request string
	window  time.Duration // DeltaWindow; tests set others

	mu    sync.Mutex
	kind  events.Kind
	text  []byte
	last  time.Time   // of the last publish
	timer *time.Timer // made on first use, then reset
	armed bool        // the timer runs: text waits
	data  []byte
}

func newDeltaBatch(request string, publish func(data []byte)) *deltaBatch {
	return &deltaBatch{request: request, publish: publish, window: DeltaWindow}
}

// add takes one piece of streamed text (engine.Tx's delta function).
func (b *deltaBatch) add(d engine.Delta) {
	if d.Text == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.text) > 0 && d.Kind != b.kind {
		b.flushLocked()
	}
	b.kind = d.Kind
	b.text = append(b.text, d.Text...)
	since := time.Since(b.last)
	switch {
	case since >= b.window || len(b.text) >= maxDeltaBytes:
		b.flushLocked()
	case b.timer == nil:
		b.timer, b.armed = time.AfterFunc(b.window-since, b.flush), true
	case !b.armed:
		b.timer.Reset(b.window - since)
		b.armed = true
	}
}

// flush publishes what waits, if anything.
func (b *deltaBatch) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *deltaBatch) flushLocked() {
	if b.armed {
		b.timer.Stop()
		b.armed = false
	}
	if len(b.text) == 0 {
		return
	}
	b.data = appendDelta(b.data[:0], b.request, b.kind, b.text)
	b.text = b.text[:0]
	b.last = time.Now()
	b.publish(b.data)
}
