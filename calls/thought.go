package calls

// This file holds how a model's thought parts (thoughtParts), which an
// app may leave out of the answer it sends back, are still told apart
// when it sends them back edited.

import (
	"maps"

	"github.com/turnlog/turnlog/events"
)

// metaThought is the block metadata key of the digest of its thought
// parts (partsDigest.thought). It is not content (Key): an answer sent
// back without its thinking is the model's answer. But where both the
// recorded block and the one sent back have thought parts, they must be
// the same (SameThought): the model reads the thinking sent back as its
// own, and thinking it never had is history rewritten.
const metaThought = "gateway.thought"

// withThought returns b with d as its metaThought (b unchanged when d is
// "").
func withThought(b events.Block, d string) events.Block {
	if d == "" {
		return b
	}
	m := make(map[string]string, len(b.Meta)+1)
	maps.Copy(m, b.Meta)
	m[metaThought] = d
	b.Meta = m
	return b
}

// SameThought reports whether b, a block sent, may stand for a, a block
// recorded (or a choice the model gave), as to their thought parts: when
// either has none (left out, or no thinking), or both have the same. Key
// leaves thought parts out, so that an answer sent back without its
// thinking is the model's; one sent back with other thinking is not.
func SameThought(a, b *events.Block) bool {
	if a.Kind != events.KindLLMText {
		return true
	}
	x, y := a.Meta[metaThought], b.Meta[metaThought]
	return x == "" || y == "" || x == y
}
