package projector

import (
	"maps"

	"github.com/turnlog/turnlog/events"
)

// Block is one element of a Turn. It is the events package's Block, so that
// blocks copied into events (forks, summaries, splits) and blocks in the
// projection are the same value.
type Block = events.Block

// Turn is a conversation as the next model call would receive it.
//
// Apply is the only sanctioned way to change a Turn: outside it, Blocks
// and their Meta are read-only. Besides the position index, a Turn caches
// the digest of each block for Hash, and Apply keeps that cache true by
// dropping the entry of every block an event adds, changes or removes. A
// block changed in place behind Apply's back is in no event; Hash digests
// it again when its shape changed (see blockShape), and ChangedInPlace
// lets a writer refuse it.
//
// A Turn belongs to one goroutine at a time: Apply changes it, and Hash and
// Index fill its caches, so neither may run while another goroutine uses
// the same Turn. Any number of goroutines may read or Clone a Turn that no
// one changes or hashes meanwhile (the worker's cache only ever clones the
// Turns it holds). The caches are unexported and never encoded: a Turn
// decoded from a snapshot or an export starts without them.
type Turn struct {
	Conversation string            `msgpack:"conv" json:"conversation"`
	Blocks       []Block           `msgpack:"blocks" json:"blocks"`
	Data         map[string]string `msgpack:"data,omitempty" json:"data,omitempty"`
	// Events counts the events folded in: the Turn is <Conversation>@<Events>.
	Events int `msgpack:"events" json:"events"`
	// Seq is the stream sequence of the last message folded in, kept by the
	// log so the next append can name it as the expected sequence. The fold
	// itself never sets it.
	Seq uint64 `msgpack:"seq" json:"seq,omitempty"`

	pos map[string]int // block ID -> index; nil when it must be rebuilt
	// sums[i] caches the digest of Blocks[i] (see Hash). It is positional,
	// so blocks with equal IDs (a Turn built by hand) never share an entry;
	// Apply moves entries with their blocks and zeroes the entry of every
	// block it adds or changes. It may be shorter than Blocks; an entry
	// counts only while its ID is the block's (see blockSum).
	sums []blockSum
}

// New returns the empty Turn of a conversation, before its first event.
func New(conversation string) *Turn {
	return &Turn{Conversation: conversation}
}

// Clone returns a deep copy, so a cached projection can be handed out and
// changed without touching the cache.
func (t *Turn) Clone() *Turn {
	c := &Turn{Conversation: t.Conversation, Events: t.Events, Seq: t.Seq}
	if len(t.sums) > 0 {
		// The digests hold no references to mutable state: a copy of the
		// entries is as independent as the copy of the blocks.
		c.sums = make([]blockSum, len(t.sums), max(len(t.sums), len(t.Blocks)+8))
		copy(c.sums, t.sums)
	}
	if t.Blocks != nil {
		c.Blocks = make([]Block, len(t.Blocks), len(t.Blocks)+8)
		for i, b := range t.Blocks {
			c.Blocks[i] = b.Clone()
		}
	}
	if t.Data != nil {
		c.Data = maps.Clone(t.Data)
	}
	return c
}

// SystemPrompt returns the active system prompt, which by definition is the
// first system block, and its index. ok is false when there is none.
func (t *Turn) SystemPrompt() (b Block, index int, ok bool) {
	for i, b := range t.Blocks {
		if b.Kind == events.KindSystem {
			return b, i, true
		}
	}
	return Block{}, -1, false
}

// Index returns the position of the block with the given ID, or -1.
func (t *Turn) Index(id string) int {
	if i, ok := t.index()[id]; ok {
		return i
	}
	return -1
}

// Block returns the block with the given ID.
func (t *Turn) Block(id string) (Block, bool) {
	if i := t.Index(id); i >= 0 {
		return t.Blocks[i], true
	}
	return Block{}, false
}

func (t *Turn) index() map[string]int {
	if t.pos == nil || len(t.pos) != len(t.Blocks) {
		// Room for the blocks the Turn has room for: pushes then never
		// grow the map (after a compaction it would grow from the few
		// blocks kept, rehashing all the way back).
		t.pos = make(map[string]int, max(len(t.Blocks), cap(t.Blocks)))
		for i, b := range t.Blocks {
			t.pos[b.ID] = i
		}
	}
	return t.pos
}
