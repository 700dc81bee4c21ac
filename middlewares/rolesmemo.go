package middlewares

import (
	"container/list"
	"sync"
	"unsafe"

	"github.com/turnlog/turnlog/events"
)

// Bounds of a Roles memo. One Roles serves every conversation of a worker,
// so the memo forgets the least recently used conversations beyond these:
// as many conversations as the worker's Turn cache holds (whose blocks
// share their text with the memo, so the memo mostly adds no copy), and at
// most rolesMemoBytes of text.
const (
	rolesMemoConversations = 1024
	rolesMemoBytes         = 32 << 20
)

// rolesMemo remembers the texts Roles found no role marker in, per
// conversation and block position, so that a text is scanned once and not
// again before every model call of every later request.
//
// An entry is the text itself, not a hash, a flag or a block ID: a block
// counts as checked only if its text equals the remembered string, so a
// text that changed (a replaced system prompt, other blocks at that
// position after an insert, a split or a compaction) is always scanned
// again. The check is O(1) in the usual case: Go compares two strings'
// data pointers before their bytes, and a block's text is the very string
// the memo holds for as long as the Turn, or the worker's cached copy whose
// clones share their strings, keeps it. Holding the string also keeps its
// bytes alive, so they can be neither changed nor reused for another text.
// An equal text in other memory (a Turn loaded afresh from the log) costs
// one comparison and is remembered from then on.
//
// It is safe for concurrent use: the list of conversations has one lock,
// taken briefly per call, and each conversation's texts another, held
// while Roles checks that conversation's Turn.
type rolesMemo struct {
	maxConvs, maxBytes int

	mu    sync.Mutex
	convs map[string]*convTexts
	lru   list.List // of *convTexts, most recently used first
	bytes int       // sum of the convs' accounted bytes
}

// convTexts is one conversation's part of a rolesMemo.
type convTexts struct {
	conv string
	// el is the entry in rolesMemo.lru, nil once evicted; accounted is
	// what rolesMemo.bytes counts for it. Both are guarded by rolesMemo.mu.
	el        *list.Element
	accounted int

	mu sync.Mutex
	// clean[i] is a text without role markers last seen in block i, or ""
	// (which holds no marker either). bytes is the sum of their lengths.
	clean []string
	bytes int
}

func newRolesMemo(maxConvs, maxBytes int) *rolesMemo {
	return &rolesMemo{maxConvs: maxConvs, maxBytes: maxBytes, convs: map[string]*convTexts{}}
}

// open returns conv's texts, locked; the caller must close them.
func (m *rolesMemo) open(conv string) *convTexts {
	m.mu.Lock()
	c := m.convs[conv]
	if c == nil {
		c = &convTexts{conv: conv}
		c.el = m.lru.PushFront(c)
		m.convs[conv] = c
	} else {
		m.lru.MoveToFront(c.el)
	}
	m.mu.Unlock()
	c.mu.Lock()
	return c
}

// close forgets c's texts beyond the Turn's blocks blocks, unlocks c and,
// if c's size changed, accounts for it and evicts the least recently used
// conversations while the memo is over its bounds.
func (m *rolesMemo) close(c *convTexts, blocks int) {
	if blocks < len(c.clean) {
		for _, s := range c.clean[blocks:] {
			c.bytes -= len(s)
		}
		clear(c.clean[blocks:])
		c.clean = c.clean[:blocks]
	}
	size := c.bytes
	c.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.el == nil || size == c.accounted && len(m.convs) <= m.maxConvs {
		return
	}
	m.bytes += size - c.accounted
	c.accounted = size
	for m.lru.Len() > 0 && (len(m.convs) > m.maxConvs || m.bytes > m.maxBytes) {
		old := m.lru.Remove(m.lru.Back()).(*convTexts)
		old.el = nil
		m.bytes -= old.accounted
		delete(m.convs, old.conv)
	}
}

// skip returns the index of the first block from i on whose text is not
// the very string remembered for its position, or len(blocks): the loop
// that makes a Turn the memo has seen cost one pointer comparison per
// block. (Two empty strings may differ in pointer: known then finds them
// equal.) It is not inlined: inside roles, the loop would share registers
// with the rest of it and reload them on every block.
//
//go:noinline
func (c *convTexts) skip(blocks []events.Block, i int) int {
	n := min(len(blocks), len(c.clean))
	if i >= n {
		return i
	}
	clean, blocks := c.clean[i:n], blocks[i:n]
	for j := range clean {
		if t, s := blocks[j].Text, clean[j]; unsafe.StringData(t) != unsafe.StringData(s) || len(t) != len(s) {
			return i + j
		}
	}
	return n
}

// known reports whether text, the text of block i, is known to hold no
// role marker, and if so remembers text itself, so that the next call can
// skip it by its pointer.
func (c *convTexts) known(i int, text string) bool {
	if i >= len(c.clean) || c.clean[i] != text {
		return false
	}
	c.clean[i] = text
	return true
}

// remember records that text, the text of block i, holds no role marker.
func (c *convTexts) remember(i int, text string) {
	if i >= len(c.clean) {
		c.clean = append(c.clean, make([]string, i+1-len(c.clean))...)
	}
	c.bytes += len(text) - len(c.clean[i])
	c.clean[i] = text
}
