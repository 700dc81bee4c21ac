package gateway

import (
	"container/list"
	"sync"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// turnCache keeps the latest Turn of the conversations the gateway
// recorded lately, so that a call does not load its conversation from the
// log (a snapshot and a tail) each time: a client re-sends its history on
// every call, and its conversation's Turn is what the call is compared
// with. An entry is used without asking the log: the append's
// expected-sequence fence refuses a Turn the log has left behind (another
// gateway or a worker appended), and the call then loads the conversation
// and plans again.
//
// A call takes its conversation's Turn out and puts it back once its
// steps are stored, so it is never copied, and two calls of one
// conversation never change one Turn: the second finds none and loads. It
// is bounded by the bytes its Turns hold (projector.Size).
type turnCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *cachedTurn, most recent first
	byID     map[string]*list.Element
}

type cachedTurn struct {
	turn *projector.Turn
	size int64
}

func newTurnCache(maxBytes int64) *turnCache {
	return &turnCache{maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}}
}

// take removes conv's Turn from the cache and hands it over; nil when none
// is cached.
func (c *turnCache) take(conv string) *projector.Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[conv]
	if !ok {
		return nil
	}
	return c.remove(el).turn
}

// put keeps t, which matches the log up to t.Seq, and lets go of the
// least recently used Turns past the bound (t too, when it alone is
// larger).
func (c *turnCache) put(t *projector.Turn) {
	if t == nil || t.Seq == 0 || c.maxBytes <= 0 {
		return
	}
	size := int64(projector.Size(t))
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[t.Conversation]; ok {
		if el.Value.(*cachedTurn).turn.Seq > t.Seq {
			return // a later call put a newer one
		}
		c.remove(el)
	}
	c.byID[t.Conversation] = c.order.PushFront(&cachedTurn{turn: t, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes && c.order.Len() > 0 {
		c.remove(c.order.Back())
	}
}

// remove takes el out. The lock is held.
func (c *turnCache) remove(el *list.Element) *cachedTurn {
	e := el.Value.(*cachedTurn)
	c.order.Remove(el)
	delete(c.byID, e.turn.Conversation)
	c.bytes -= e.size
	return e
}

// itemBlocks is calls.ItemBlocks of conv's cached Turn, read under the
// cache's lock (a call may take the Turn and change it once it is
// released); false when conv is not cached or its Turn lacks the item.
func (c *turnCache) itemBlocks(conv, id string) ([]events.Block, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[conv]
	if !ok {
		return nil, false
	}
	return calls.ItemBlocks(el.Value.(*cachedTurn).turn.Blocks, id)
}
