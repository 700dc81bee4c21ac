package worker

import (
	"container/list"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/turnlog/turnlog/projector"
)

// turnCache keeps the latest Turn of recently served conversations, with
// the request that last wrote it. An entry is never trusted blindly: either
// its sequence is checked against the log's last one (one direct get), or
// it is used optimistically and the append's expected-sequence check
// refuses it if the log has moved on. A request takes its conversation's
// Turn out and puts the Turn back when done, so it is never copied.
//
// The cache is bounded by the bytes its Turns hold (projector.Size), not
// by their number: a Turn grows with its conversation, and a count bound
// let a worker's memory grow from 58 MB to 222 MB as Turns neared the
// compaction limit (and would let uncompacted ones take gigabytes). The
// Turns it lets go of, and those left idle, are handed to release, which
// saves their snapshots (see snapshots.go), so that the next load of the
// conversation, by any worker, starts from where this one left it.
type turnCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *cached, most recent first
	byID     map[string]*list.Element
	// saved is, per conversation whose Turn is cached or in a request's
	// hands, how many events its last snapshot known to this worker
	// holds: a Turn let go of with more is worth a snapshot.
	saved map[string]int
	// release receives the Turns the cache let go of that are ahead of
	// their snapshots; it is called without the lock held.
	release func(t *projector.Turn)

	bytesGauge, turnsGauge prometheus.Gauge
}

type cached struct {
	turn  *projector.Turn
	cause string // the request whose events end the Turn
	size  int64
	used  time.Time
}

func newTurnCache(maxBytes int64, m *Metrics) *turnCache {
	return &turnCache{
		maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}, saved: map[string]int{},
		release: func(*projector.Turn) {}, bytesGauge: m.cacheBytes, turnsGauge: m.cacheTurns,
	}
}

// take removes conv's Turn from the cache and hands it over, with the
// request that last wrote it; nil when none is cached. The caller changes
// it in place (no copy: a copy of a long Turn costs more than the rest of
// a request) and puts it back once its request is stored. A conversation's
// requests run one at a time, so nothing else wants it meanwhile; a request
// that fails half-way leaves the Turn ahead of the log and must not put it
// back.
func (c *turnCache) take(conv string) (*projector.Turn, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[conv]
	if !ok {
		return nil, ""
	}
	e := c.remove(el)
	return e.turn, e.cause
}

// put keeps t, written last by request cause, and lets go of the least
// recently used Turns while the cache holds more than its bound (t too,
// when it alone is larger).
func (c *turnCache) put(t *projector.Turn, cause string) {
	if t == nil || t.Seq == 0 {
		return
	}
	size := int64(projector.Size(t))
	var out []*projector.Turn
	c.mu.Lock()
	e := &cached{turn: t, cause: cause, size: size, used: time.Now()}
	if el, ok := c.byID[t.Conversation]; ok {
		c.remove(el)
	}
	c.byID[t.Conversation] = c.order.PushFront(e)
	c.bytes += size
	for c.bytes > c.maxBytes && c.order.Len() > 0 {
		e := c.remove(c.order.Back())
		if c.ahead(e.turn) {
			out = append(out, e.turn)
		}
		delete(c.saved, e.turn.Conversation)
	}
	c.update()
	c.mu.Unlock()
	for _, t := range out {
		c.release(t)
	}
}

// putBack is put for a Turn taken out to be saved: it goes back only if
// no request has put a newer one meanwhile.
func (c *turnCache) putBack(t *projector.Turn, cause string) {
	c.mu.Lock()
	_, taken := c.byID[t.Conversation]
	c.mu.Unlock()
	if !taken {
		c.put(t, cause)
	}
}

// drop forgets conv's Turn, which is not the log's any more.
func (c *turnCache) drop(conv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[conv]; ok {
		c.remove(el)
	}
	delete(c.saved, conv)
	c.update()
}

// noteSaved records that conv's snapshot holds events events.
func (c *turnCache) noteSaved(conv string, events int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.saved[conv] = max(c.saved[conv], events)
}

// idle takes out the Turns not used for d that are ahead of their
// snapshots, with their causes, to be saved and put back.
func (c *turnCache) idle(d time.Duration) ([]*projector.Turn, []string) {
	return c.takeAhead(time.Now().Add(-d))
}

// takeAhead takes out every Turn last used before until that is ahead of
// its snapshot.
func (c *turnCache) takeAhead(until time.Time) ([]*projector.Turn, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var turns []*projector.Turn
	var causes []string
	for el := c.order.Back(); el != nil; {
		e := el.Value.(*cached)
		prev := el.Prev()
		if !e.used.Before(until) {
			break // the rest were used later
		}
		if c.ahead(e.turn) {
			c.remove(el)
			turns, causes = append(turns, e.turn), append(causes, e.cause)
		}
		el = prev
	}
	c.update()
	return turns, causes
}

// ahead reports whether t holds events its conversation's last known
// snapshot does not. The lock is held.
func (c *turnCache) ahead(t *projector.Turn) bool { return t.Events > c.saved[t.Conversation] }

// remove takes el out of the list and the index. The lock is held.
func (c *turnCache) remove(el *list.Element) *cached {
	e := el.Value.(*cached)
	c.order.Remove(el)
	delete(c.byID, e.turn.Conversation)
	c.bytes -= e.size
	c.update()
	return e
}

// update sets the size gauges. The lock is held.
func (c *turnCache) update() {
	c.bytesGauge.Set(float64(c.bytes))
	c.turnsGauge.Set(float64(c.order.Len()))
}
