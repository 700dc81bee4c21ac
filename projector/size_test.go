package projector_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// TestSizeIsCloseToTheMemoryHeld: Size, which caches bound their memory
// by, is within a factor of 1.5 of the heap a Turn keeps alive, for Turns
// of short and long blocks, with and without metadata.
func TestSizeIsCloseToTheMemoryHeld(t *testing.T) {
	tests := []struct {
		name   string
		blocks int
		text   int
		meta   int
	}{
		{name: "short blocks", blocks: 4000, text: 20},
		{name: "chat-sized blocks", blocks: 2000, text: 600},
		{name: "with metadata", blocks: 2000, text: 200, meta: 3},
		{name: "long blocks", blocks: 100, text: 50_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			turn := projector.New("c")
			for i := 0; i < tc.blocks; i++ {
				var meta map[string]string
				if tc.meta > 0 {
					meta = map[string]string{}
					for k := 0; k < tc.meta; k++ {
						meta[fmt.Sprintf("key-%d", k)] = fmt.Sprintf("value %d of block %d", k, i)
					}
				}
				// Text built per block, as decoded events and snapshots
				// give each block its own.
				text := strings.Repeat(string(rune('a'+i%26)), tc.text)
				require.NoError(t, projector.Apply(turn, events.New("c", "r", i, "test",
					events.UserAppended{BlockID: fmt.Sprintf("block-%06d", i), Text: text, Meta: meta})))
			}
			projector.Hash(turn) // fills the digest cache, as a worker's Turn has it
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			size := float64(projector.Size(turn))
			t.Logf("Size %.0f, heap held %.0f (%.2f)", size, held, size/held)
			assert.InDelta(t, 1, size/held, 0.5, "Size %.0f bytes, heap held %.0f", size, held)
			runtime.KeepAlive(turn)
		})
	}
}
