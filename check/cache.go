package check

import (
	"container/list"
	"fmt"
	"iter"
	"sync"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Fed is a conversation's Checker and how many of the conversation's
// events it was fed: what a process that records conversations (a worker,
// the gateway) keeps between their calls, so that each call is checked at
// the cost of its own events.
type Fed struct {
	Conversation string
	Checker      *Checker
	// Events counts the events fed, from the conversation's first.
	Events int
	size   int
}

// Feed feeds the conversation's next event (Checker.Feed) and counts it.
func (f *Fed) Feed(e events.Event) ([]Finding, error) {
	fs, err := f.Checker.Feed(e)
	if err != nil {
		return nil, err
	}
	f.Events++
	return fs, nil
}

// Observe counts the conversation's next event, observed by a Checker
// that a caller folding the events itself keeps (Checker.Observe; turn is
// the conversation with e applied), and returns its findings.
func (f *Fed) Observe(e events.Event, turn *projector.Turn) []Finding {
	f.Events++
	return f.Checker.Observe(e, turn.Events, turn)
}

// RebuildObserving is Rebuild for a Fed that its caller then feeds
// through Observe: the events are folded into a Turn that is let go
// once the Checker has observed them.
func RebuildObserving(conv string, n int, evs iter.Seq2[events.Event, error]) (*Fed, error) {
	f := &Fed{Conversation: conv, Checker: New()}
	if n == 0 {
		return f, nil
	}
	turn := projector.New(conv)
	for e, err := range evs {
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", conv, err)
		}
		if err := projector.Apply(turn, e); err != nil {
			return nil, fmt.Errorf("check %s: %w", conv, err)
		}
		f.Observe(e, turn)
		if f.Events == n {
			return f, nil
		}
	}
	return nil, fmt.Errorf("check %s: the log holds %d events before the call, not %d", conv, f.Events, n)
}

// Rebuild returns a new Checker of conversation conv fed its first n
// events, read from evs (the conversation's events in log order; read
// no further than the n-th): a Fed that missed events (another process
// wrote some, or it was let go) starts again this way.
func Rebuild(conv string, n int, evs iter.Seq2[events.Event, error]) (*Fed, error) {
	f := &Fed{Conversation: conv, Checker: New()}
	if n == 0 {
		return f, nil
	}
	for e, err := range evs {
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", conv, err)
		}
		if _, err := f.Feed(e); err != nil {
			return nil, fmt.Errorf("check %s: %w", conv, err)
		}
		if f.Events == n {
			return f, nil
		}
	}
	return nil, fmt.Errorf("check %s: the log holds %d events before the call, not %d", conv, f.Events, n)
}

// Cache keeps the Feds of the latest conversations, most recently put
// first, of at most a limit of bytes in all (as Checker.Size estimates
// them). A call takes its conversation's Fed out and puts it back, so
// concurrent calls of one conversation never share one.
type Cache struct {
	mu    sync.Mutex
	limit int
	bytes int
	order *list.List // of *Fed
	byID  map[string]*list.Element
}

// NewCache returns a Cache of at most limit bytes.
func NewCache(limit int) *Cache {
	return &Cache{limit: limit, order: list.New(), byID: map[string]*list.Element{}}
}

// Take removes conv's Fed from the cache and returns it (nil when none is
// kept).
func (c *Cache) Take(conv string) *Fed {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[conv]
	if !ok {
		return nil
	}
	c.remove(el)
	return el.Value.(*Fed)
}

// Put keeps f, letting go of the least recently put past the limit. Of
// two Feds of one conversation the one fed more events is kept; one
// larger than the limit alone is not kept (its conversation's next call
// rebuilds it).
func (c *Cache) Put(f *Fed) {
	f.size = f.Checker.Size()
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.size > c.limit {
		return
	}
	if el, ok := c.byID[f.Conversation]; ok {
		if el.Value.(*Fed).Events >= f.Events {
			return
		}
		c.remove(el)
	}
	c.byID[f.Conversation] = c.order.PushFront(f)
	c.bytes += f.size
	for c.bytes > c.limit {
		c.remove(c.order.Back())
	}
}

// Bytes returns the estimated size of the Feds kept.
func (c *Cache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (c *Cache) remove(el *list.Element) {
	f := el.Value.(*Fed)
	c.order.Remove(el)
	delete(c.byID, f.Conversation)
	c.bytes -= f.size
}
