package calls

import (
	"container/list"
	"crypto/sha256"
	"sync"

	"github.com/turnlog/turnlog/events"
)

// ParseCache remembers the items and parameters of recent requests by
// their bytes, so that a request that re-sends its history (every call of
// a chat does) reads only what is new in it. An entry is only ever used
// for the very same bytes (of the same API and member), so what a cached
// item gives is what parsing it again would. It is bounded in bytes and
// safe for concurrent use; nil caches nothing.
type ParseCache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	order    *list.List // of *cacheEntry, most recent first
	byKey    map[[32]byte]*list.Element
}

type cacheEntry struct {
	key   [32]byte
	item  Item   // an input item
	canon []byte // or a parameter's canonical JSON
	size  int
}

// NewParseCache returns a ParseCache of about maxBytes.
func NewParseCache(maxBytes int) *ParseCache {
	return &ParseCache{maxBytes: maxBytes, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

func cacheKey(api API, field string, raw []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(api))
	h.Write([]byte{0})
	h.Write([]byte(field))
	h.Write([]byte{0})
	h.Write(raw)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func (c *ParseCache) get(k [32]byte) (*cacheEntry, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry), true
}

func (c *ParseCache) put(e *cacheEntry) {
	if c == nil || e.size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[e.key]; ok {
		return
	}
	c.byKey[e.key] = c.order.PushFront(e)
	c.bytes += e.size
	for c.bytes > c.maxBytes {
		el := c.order.Back()
		old := el.Value.(*cacheEntry)
		c.order.Remove(el)
		delete(c.byKey, old.key)
		c.bytes -= old.size
	}
}

// item returns the item raw is (field "" for an element of the list of
// messages), parsed by parse when it is not cached. The blocks handed out
// are copies: the caller's events own them.
func (c *ParseCache) item(api API, field string, raw []byte, parse func() (Item, error)) (Item, error) {
	if c == nil {
		return parse()
	}
	k := cacheKey(api, field, raw)
	if e, ok := c.get(k); ok {
		return cloneItem(e.item), nil
	}
	it, err := parse()
	if err != nil {
		return it, err
	}
	size := 2*len(raw) + len(it.Canon) + 256
	c.put(&cacheEntry{key: k, item: cloneItem(it), size: size})
	return it, nil
}

// canonical returns Canonical(raw) of a parameter, cached.
func (c *ParseCache) canonical(raw []byte) ([]byte, error) {
	if c == nil {
		return Canonical(raw)
	}
	k := cacheKey("", "param", raw)
	if e, ok := c.get(k); ok {
		return e.canon, nil
	}
	canon, err := Canonical(raw)
	if err != nil {
		return nil, err
	}
	c.put(&cacheEntry{key: k, canon: canon, size: len(raw) + len(canon) + 128})
	return canon, nil
}

func cloneItem(it Item) Item {
	bs := make([]events.Block, len(it.Blocks))
	for i, b := range it.Blocks {
		bs[i] = b.Clone()
	}
	it.Blocks = bs
	return it
}
