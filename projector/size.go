package projector

import (
	"unsafe"

	"github.com/turnlog/turnlog/events"
)

// Sizes the estimate below counts, for a 64-bit Go runtime: a string is
// its header plus its bytes; a map entry of two strings, with the map's
// control bytes and spare slots, about twice the entry's headers.
const (
	blockBytes     = int(unsafe.Sizeof(Block{}))
	sumBytes       = int(unsafe.Sizeof(blockSum{}))
	spanBytes      = int(unsafe.Sizeof(events.Span{}))
	mapBytes       = 48                         // a map's header
	mapEntryBytes  = 2 * 2 * 16                 // two string headers, twice
	posEntryBytes  = 2 * (16 + 8)               // a string and an int, twice
	turnBytes      = int(unsafe.Sizeof(Turn{})) // the Turn itself
	allocSlackBase = 16                         // rounding of one allocation
)

// Size estimates the bytes of memory t holds: its blocks (the slice's
// capacity, every string, every metadata map), its data and its caches (the
// ID index and the block digests). It is what a cache of Turns bounds its
// memory by; it counts each string in full even when two share their
// bytes, and does not count memory a string keeps alive around it (a
// string read from a message by events.DecodeOwned is part of that
// message), so it is an estimate, close for Turns built by Apply or read
// from a snapshot. It costs one pass over the blocks.
func Size(t *Turn) int {
	n := turnBytes + len(t.Conversation) + cap(t.Blocks)*blockBytes
	for i := range t.Blocks {
		b := &t.Blocks[i]
		n += len(b.ID) + len(b.Kind) + len(b.Text) + len(b.Trust) + len(b.CallID) +
			len(b.ToolName) + len(b.Arguments) + len(b.Encrypted)
		n += stringMapSize(b.Meta)
		n += cap(b.Untrusted) * spanBytes
		for _, sp := range b.Untrusted {
			n += len(sp.Var)
		}
	}
	n += stringMapSize(t.Data)
	if t.pos != nil {
		n += mapBytes + len(t.pos)*posEntryBytes
	}
	n += cap(t.sums) * sumBytes
	return n
}

func stringMapSize(m map[string]string) int {
	if m == nil {
		return 0
	}
	n := mapBytes + len(m)*mapEntryBytes
	for k, v := range m {
		n += len(k) + len(v) + allocSlackBase
	}
	return n
}
