package calls

import (
	"bytes"
	"container/list"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/turnlog/turnlog/events"
)

// ParseCache remembers the items and parameters of recent requests by
// their bytes, so that a request that re-sends its history (every call of
// a chat does) reads only what is new in it. An entry is only ever used
// for the very same bytes (of the same API and member), so what a cached
// item gives is what parsing it again would. It is bounded in bytes and
// safe for concurrent use; nil caches nothing.
//
// Entries are found by a seeded hash of their bytes and used only when
// the bytes are equal (a comparison costs a fraction of a cryptographic
// hash, and a collision can only cost a miss).
type ParseCache struct {
	mu       sync.Mutex
	seed     maphash.Seed
	maxBytes int
	bytes    int
	order    *list.List // of *cacheEntry, most recent first
	byKey    map[uint64]*list.Element
	// Params by a hash of their members, oldest first in paramsOrder.
	paramsByKey map[uint64]*paramsEntry
	paramsOrder []uint64
}

// paramsEntry is a request's Params by the members they were made of.
type paramsEntry struct {
	members map[string][]byte
	inputs  []string
	params  Params
}

// paramsMax bounds the Params a ParseCache remembers (a few hundred bytes
// each, their large values shared with the members' entries).
const paramsMax = 1024

type cacheEntry struct {
	key   uint64
	api   API
	field string
	raw   []byte // the bytes it was read from
	item  Item   // an input item
	canon []byte // or a parameter's canonical JSON
	size  int
}

// NewParseCache returns a ParseCache of about maxBytes.
func NewParseCache(maxBytes int) *ParseCache {
	return &ParseCache{seed: maphash.MakeSeed(), maxBytes: maxBytes, order: list.New(), byKey: map[uint64]*list.Element{},
		paramsByKey: map[uint64]*paramsEntry{}}
}

func (c *ParseCache) key(api API, field string, raw []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(string(api))
	h.WriteByte(0)
	h.WriteString(field)
	h.WriteByte(0)
	h.Write(raw)
	return h.Sum64()
}

// get returns the entry of exactly these bytes, if any.
func (c *ParseCache) get(k uint64, api API, field string, raw []byte) (*cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.getLocked(k, api, field, raw)
	return e, e != nil
}

// getLocked is get with c.mu held; nil when there is no entry.
func (c *ParseCache) getLocked(k uint64, api API, field string, raw []byte) *cacheEntry {
	el, ok := c.byKey[k]
	if !ok {
		return nil
	}
	e := el.Value.(*cacheEntry)
	if e.api != api || e.field != field || !bytes.Equal(e.raw, raw) {
		return nil
	}
	c.order.MoveToFront(el)
	return e
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

// Bytes returns the estimated size of the entries kept.
func (c *ParseCache) Bytes() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Reset forgets every entry: an item is found by its bytes, not by the
// conversation it came in, so a conversation erased since is let go this
// way (its entries are parsed again when they come again).
func (c *ParseCache) Reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	c.byKey = map[uint64]*list.Element{}
	c.bytes = 0
	c.paramsByKey = map[uint64]*paramsEntry{}
	c.paramsOrder = nil
}

// item returns the item raw is (field "" for an element of the list of
// messages), parsed by parse when it is not cached. The blocks handed out
// are the caller's (see share).
func (c *ParseCache) item(api API, field string, raw []byte, parse func() (Item, error)) (Item, error) {
	if c == nil {
		return parse()
	}
	k := c.key(api, field, raw)
	if e, ok := c.get(k, api, field, raw); ok {
		return e.item.share(), nil
	}
	it, err := parse()
	if err != nil {
		return it, err
	}
	c.keep(k, api, field, raw, it)
	return it, nil
}

// items is item for every element of a list of messages, its cache
// entries found under one lock.
func (c *ParseCache) items(api API, raws [][]byte, parse func(i int) (Item, error)) ([]Item, error) {
	out := make([]Item, len(raws))
	if c == nil {
		for i := range raws {
			it, err := parse(i)
			if err != nil {
				return nil, &itemError{i, err}
			}
			out[i] = it
		}
		return out, nil
	}
	keys := make([]uint64, len(raws))
	for i, r := range raws {
		keys[i] = c.key(api, "", r)
	}
	hits := make([]*cacheEntry, len(raws))
	shared := 0 // blocks of the items found
	c.mu.Lock()
	for i, r := range raws {
		if hits[i] = c.getLocked(keys[i], api, "", r); hits[i] != nil {
			shared += len(hits[i].item.Blocks)
		}
	}
	c.mu.Unlock()
	// The found items' blocks, copied into one slice (see share).
	blocks := make([]events.Block, 0, shared)
	for i, r := range raws {
		if e := hits[i]; e != nil {
			it := e.item
			start := len(blocks)
			blocks = append(blocks, it.Blocks...)
			it.Blocks = blocks[start:len(blocks):len(blocks)]
			out[i] = it
			continue
		}
		it, err := parse(i)
		if err != nil {
			return nil, &itemError{i, err}
		}
		c.keep(keys[i], api, "", r, it)
		out[i] = it
	}
	return out, nil
}

// keep caches item it, read from raw.
func (c *ParseCache) keep(k uint64, api API, field string, raw []byte, it Item) {
	c.put(&cacheEntry{key: k, api: api, field: field, raw: bytes.Clone(raw), item: cloneItem(it), size: 3*len(raw) + len(it.Canon) + 256})
}

// itemError is an element of a list that could not be read.
type itemError struct {
	index int
	err   error
}

func (e *itemError) Error() string { return e.err.Error() }
func (e *itemError) Unwrap() error { return e.err }

// params returns newParams(canon, inputs), remembered: a conversation's
// calls send the same parameters (model, tools, ...) again and again, and
// making Params hashes them and their document each time.
func (c *ParseCache) params(canon map[string][]byte, inputs []string) Params {
	if c == nil {
		return newParams(canon, inputs)
	}
	names := sortedKeys(canon)
	var h maphash.Hash
	h.SetSeed(c.seed)
	for _, f := range inputs {
		h.WriteString(f)
		h.WriteByte(0)
	}
	h.WriteByte(1)
	for _, k := range names {
		if slices.Contains(inputs, k) {
			continue // the input is not a parameter
		}
		h.WriteString(k)
		h.WriteByte(0)
		h.Write(canon[k])
		h.WriteByte(0)
	}
	k := h.Sum64()
	c.mu.Lock()
	e, ok := c.paramsByKey[k]
	c.mu.Unlock()
	if ok && e.matches(canon, inputs) {
		return e.params
	}
	p := newParams(canon, inputs)
	e = &paramsEntry{members: map[string][]byte{}, inputs: slices.Clone(inputs), params: p}
	for _, n := range names {
		if !slices.Contains(inputs, n) {
			e.members[n] = bytes.Clone(canon[n])
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.paramsByKey[k]; !ok {
		c.paramsOrder = append(c.paramsOrder, k)
		if len(c.paramsOrder) > paramsMax {
			delete(c.paramsByKey, c.paramsOrder[0])
			c.paramsOrder = c.paramsOrder[1:]
		}
	}
	c.paramsByKey[k] = e
	return p
}

// matches reports whether the entry was made of these members.
func (e *paramsEntry) matches(canon map[string][]byte, inputs []string) bool {
	if !slices.Equal(e.inputs, inputs) {
		return false
	}
	n := 0
	for k, v := range canon {
		if slices.Contains(inputs, k) {
			continue
		}
		n++
		if w, ok := e.members[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return n == len(e.members)
}

// canonical returns Canonical(raw) of a parameter, cached.
func (c *ParseCache) canonical(raw []byte) ([]byte, error) {
	if c == nil {
		return Canonical(raw)
	}
	k := c.key("", "param", raw)
	if e, ok := c.get(k, "", "param", raw); ok {
		return e.canon, nil
	}
	canon, err := Canonical(raw)
	if err != nil {
		return nil, err
	}
	c.put(&cacheEntry{key: k, field: "param", raw: bytes.Clone(raw), canon: canon, size: 2*len(raw) + len(canon) + 128})
	return canon, nil
}

// share returns a cached item for a request: its blocks in a slice of
// their own (a caller may set their fields), their metadata and spans
// shared with the cache, read-only as a Turn's are (the projector copies
// an event's metadata and spans into the Turn): sharing them spares a map
// per block per call. items does the same for a list's items, their
// blocks in one slice.
func (it Item) share() Item {
	it.Blocks = slices.Clone(it.Blocks)
	return it
}

func cloneItem(it Item) Item {
	bs := make([]events.Block, len(it.Blocks))
	for i, b := range it.Blocks {
		bs[i] = b.Clone()
	}
	it.Blocks = bs
	return it
}
