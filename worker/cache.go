package worker

import (
	"container/list"
	"sync"

	"github.com/turnlog/turnlog/projector"
)

// turnCache keeps the latest Turn of recently served conversations. An
// entry is used only when its sequence is the log's last one (checked with
// one direct get), so a stale entry is never served: it is a cache in the
// strict sense.
type turnCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *projector.Turn, most recent first
	byID  map[string]*list.Element
}

func newTurnCache(max int) *turnCache {
	return &turnCache{max: max, order: list.New(), byID: map[string]*list.Element{}}
}

// get returns a copy of the cached Turn if it is at seq.
func (c *turnCache) get(conv string, seq uint64) *projector.Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[conv]
	if !ok {
		return nil
	}
	t := el.Value.(*projector.Turn)
	if t.Seq != seq || seq == 0 {
		return nil
	}
	c.order.MoveToFront(el)
	return t.Clone()
}

func (c *turnCache) put(t *projector.Turn) {
	if t == nil || t.Seq == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[t.Conversation]; ok {
		el.Value = t
		c.order.MoveToFront(el)
		return
	}
	c.byID[t.Conversation] = c.order.PushFront(t)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*projector.Turn).Conversation)
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
