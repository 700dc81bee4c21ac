package check

// What a Checker holds in memory, estimated: a process that keeps one per
// conversation bounds them by it (Cache).

import "github.com/turnlog/turnlog/projector"

// entryBytes estimates what the Checker keeps per block besides its
// text, which it shares with the Turn: an ID and a content's string
// headers, a map entry.
const entryBytes = 160

// Size estimates the memory a Checker holds, in bytes: the Turn it folds
// (projector.Size) and what it keeps per block of the previous call's
// input, per reasoning block and per system block. Fed through Observe it
// has no Turn, and the texts it keeps are counted instead: they outlive
// the caller's Turn when the caller lets that go first. A component that
// keeps a Checker per conversation bounds them with it, as it bounds its
// Turns.
func (c *Checker) Size() int {
	n := entryBytes * (len(c.produced) + len(c.origin) + len(c.inserted) + len(c.copied) + len(c.follower) + len(c.parts) + len(c.signed) + len(c.thought) + len(c.documents))
	if c.turn != nil {
		n += projector.Size(c.turn)
	} else {
		for _, k := range c.produced {
			n += k.bytes()
		}
		for _, p := range c.parts {
			n += len(p.item) + len(p.text) + len(p.repeated)
		}
		if c.prev != nil {
			for _, k := range c.prev.contents {
				n += k.bytes()
			}
		}
	}
	if c.prev != nil {
		n += entryBytes * len(c.prev.ids)
	}
	return n
}

// bytes is the length of the strings a content holds.
func (k content) bytes() int {
	return len(k.text) + len(k.tool) + len(k.args) + len(k.callID) + len(k.encrypted)
}
