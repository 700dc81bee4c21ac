package replay

import (
	"context"
	"sync"
)

// Descriptions remembers what Describe read of each conversation, keyed by
// the conversation's last message, so that a long-running lister reads a
// history again only after it changed. `turnlog ls` describes only the
// conversations it shows; a list filtered by what Describe reads (GET
// /conversations?findings=true) has to describe every match, and without
// this would read every matching conversation's whole history on every
// call. It is safe for concurrent use.
type Descriptions struct {
	mu   sync.Mutex
	max  int
	seen map[string]Conversation
}

// NewDescriptions remembers at most limit conversations (at least 1); past
// that, some are forgotten and read again when next asked for.
func NewDescriptions(limit int) *Descriptions {
	return &Descriptions{max: max(limit, 1), seen: map[string]Conversation{}}
}

// Describe fills in cs as DescribeAll does: from memory for each
// conversation whose last message (LastSeq and Messages, as Newest gives
// them) is the one it was described at, by reading the others. A
// conversation without LastSeq is always read.
func (d *Descriptions) Describe(ctx context.Context, src Source, cs []Conversation) error {
	var misses []Conversation
	var at []int
	d.mu.Lock()
	for i := range cs {
		c := &cs[i]
		if old, ok := d.seen[c.ID]; ok && c.LastSeq != 0 && old.LastSeq == c.LastSeq && old.Messages == c.Messages {
			*c = old
			continue
		}
		misses, at = append(misses, *c), append(at, i)
	}
	d.mu.Unlock()
	if len(misses) == 0 {
		return nil
	}
	if err := DescribeAll(ctx, src, misses); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for j, c := range misses {
		cs[at[j]] = c
		if c.LastSeq == 0 {
			continue
		}
		if _, ok := d.seen[c.ID]; !ok && len(d.seen) >= d.max {
			// Forget about a tenth, whichever the map yields first: they
			// are read again when asked for, nothing is wrong.
			n := max(d.max/10, 1)
			for id := range d.seen {
				delete(d.seen, id)
				if n--; n == 0 {
					break
				}
			}
		}
		d.seen[c.ID] = c
	}
	return nil
}
