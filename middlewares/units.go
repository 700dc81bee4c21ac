package middlewares

import "github.com/turnlog/turnlog/events"

// span is a run of blocks [start, end) that must stay together.
type span struct{ start, end int }

// unitEnd returns the end (exclusive) of the unit that starts at start.
// A unit is the smallest contiguous run of blocks that must never be
// separated: a reasoning block and the block right after it (providers
// reject a reasoning item whose output does not follow it), and a tool call
// and its result, with everything between them (a model that asks for two
// calls gets both results after both calls). Ordering moves whole units
// and compaction cuts only between units, so neither can orphan a
// reasoning block or a tool result.
//
// It allocates nothing: the chain calls it over the whole Turn before
// every model call.
func unitEnd(blocks []events.Block, start int) int {
	end := start + 1
	for k := start; k < end; k++ {
		switch b := &blocks[k]; b.Kind {
		case events.KindReasoning:
			if k+1 < len(blocks) {
				end = max(end, k+2)
			}
		case events.KindToolCall:
			for r := k + 1; r < len(blocks); r++ {
				if blocks[r].Kind == events.KindToolResult && blocks[r].CallID == b.CallID {
					end = max(end, r+1)
					break
				}
			}
		}
	}
	return end
}

// units cuts blocks into their units (see unitEnd), in order.
func units(blocks []events.Block) []span {
	var out []span
	for start := 0; start < len(blocks); {
		end := unitEnd(blocks, start)
		out = append(out, span{start, end})
		start = end
	}
	return out
}
