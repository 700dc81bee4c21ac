package worker

import (
	"container/list"
	"sync"

	"github.com/turnlog/turnlog/projector"
)

// turnCache keeps the latest Turn of recently served conversations, with
// the request that last wrote it. An entry is never trusted blindly: either
// its sequence is checked against the log's last one (one direct get), or
// it is used optimistically and the append's expected-sequence check
// refuses it if the log has moved on. A request takes its conversation's
// Turn out and puts the Turn back when done, so it is never copied.
type turnCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cached, most recent first
	byID  map[string]*list.Element
}

type cached struct {
	turn  *projector.Turn
	cause string // the request whose events end the Turn
}

func newTurnCache(max int) *turnCache {
	return &turnCache{max: max, order: list.New(), byID: map[string]*list.Element{}}
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
	c.order.Remove(el)
	delete(c.byID, conv)
	e := el.Value.(*cached)
	return e.turn, e.cause
}

// put keeps t, written last by request cause.
func (c *turnCache) put(t *projector.Turn, cause string) {
	if t == nil || t.Seq == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &cached{turn: t, cause: cause}
	if el, ok := c.byID[t.Conversation]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.byID[t.Conversation] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*cached).turn.Conversation)
	}
}

func (c *turnCache) drop(conv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[conv]; ok {
		c.order.Remove(el)
		delete(c.byID, conv)
	}
}
