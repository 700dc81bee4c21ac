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
// published: a piece that comes after a quiet spell of at least this long
// goes out after DeltaLead, with whatever follows it by then, and those
// that follow within the window go out together at its end. A provider streams a message per token and the scripted engine one
// per word, while a reader sees no difference below a screen refresh or
// two; every message costs a publish in the worker and a routing in the
// server, which the profile of `turnlog bench --workers` showed at about a
// tenth of a request's CPU with one publish per word.
const DeltaWindow = 20 * time.Millisecond

// DeltaLead is how long the first piece after a quiet spell waits for the
// pieces right behind it. A model's first token comes hundreds of
// milliseconds after the call, and 2 ms more is nothing to a reader; but
// an answer that arrives at once (the scripted engine, a provider's
// buffered burst, a reply after a tool call) went out as its first word
// alone and then the rest: one message in three of a request's deltas,
// about 3 % of its CPU in `turnlog bench --workers`.
const DeltaLead = 2 * time.Millisecond

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
	lead    time.Duration // DeltaLead; tests set others

	mu    sync.Mutex
	kind  events.Kind
	text  []byte
	last  time.Time   // of the last publish
	timer *time.Timer // made on first use, then reset
	armed bool        // the timer runs: text waits
	data  []byte
	// stepOf, when set, is the step the text streamed now will be
	// stored in (the request's Tx.Step); step is the batch's.
	stepOf func() int
	step   int
}

func newDeltaBatch(request string, publish func(data []byte)) *deltaBatch {
	return &deltaBatch{request: request, publish: publish, window: DeltaWindow, lead: DeltaLead}
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
	if len(b.text) == 0 && b.stepOf != nil {
		// A batch never spans steps: it is flushed before each append.
		b.step = b.stepOf()
	}
	b.kind = d.Kind
	b.text = append(b.text, d.Text...)
	if len(b.text) >= maxDeltaBytes {
		b.flushLocked()
		return
	}
	if b.armed {
		return // the window's timer will publish it
	}
	wait := b.window - time.Since(b.last)
	if wait <= 0 {
		wait = b.lead // after a quiet spell
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(wait, b.flush)
	} else {
		b.timer.Reset(wait)
	}
	b.armed = true
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
	b.data = appendDelta(b.data[:0], b.request, b.kind, b.text, b.step)
	b.text = b.text[:0]
	b.last = time.Now()
	b.publish(b.data)
}
