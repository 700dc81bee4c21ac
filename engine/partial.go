package engine

import (
	"strings"
	"sync"

	"github.com/turnlog/turnlog/events"
)

// maxPartialBytes bounds what a failed call keeps of what it streamed
// (InferenceFailed.Partial): its step must fit one NATS message, beside
// the call's other events, also on a server with NATS's default
// max_payload of 1 MiB.
const maxPartialBytes = 256 << 10

// partialUnstoredNote ends the reason of a failed call whose streamed
// output was past maxPartialBytes.
const partialUnstoredNote = "; what the call streamed before it failed is larger than turnlog keeps (256 KiB), and is not recorded"

// streamed gathers a model call's deltas, so that a call that fails after
// streaming keeps what its client was shown (InferenceFailed.Partial):
// consecutive deltas of one kind are one block.
type streamed struct {
	mu     sync.Mutex
	blocks []events.Block
	text   []strings.Builder
	size   int
}

// add is the engine's delta callback's first step.
func (s *streamed) add(d Delta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.size += len(d.Text)
	if s.size > maxPartialBytes || d.Text == "" {
		return
	}
	kind := d.Kind
	if kind == "" {
		kind = events.KindLLMText
	}
	if n := len(s.blocks); n == 0 || s.blocks[n-1].Kind != kind {
		s.blocks = append(s.blocks, events.Block{ID: NewID(), Kind: kind})
		s.text = append(s.text, strings.Builder{})
	}
	s.text[len(s.text)-1].WriteString(d.Text)
}

// partial returns the blocks gathered (nil when none), and whether they
// were too large to keep.
func (s *streamed) partial() (blocks []events.Block, tooLarge bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.size > maxPartialBytes {
		return nil, true
	}
	for i := range s.blocks {
		s.blocks[i].Text = s.text[i].String()
	}
	return s.blocks, false
}
