package middlewares

import "github.com/turnlog/turnlog/events"

// span is a run of blocks [start, end) that must stay together.
type span struct{ start, end int }

// units cuts blocks into the smallest contiguous runs that must never be
// separated: a reasoning block and the block right after it (providers
// reject a reasoning item whose output does not follow it), and a tool call
// and its result, with everything between them (a model that asks for two
// calls gets both results after both calls). Ordering moves whole units
// and compaction cuts only between units, so neither can orphan a
// reasoning block or a tool result.
func units(blocks []events.Block) []span {
	n := len(blocks)
	if n == 0 {
		return nil
	}
	// reach[i] is the last index block i must stay with.
	reach := make([]int, n)
	var callAt map[string]int
	for i, b := range blocks {
		reach[i] = i
		switch b.Kind {
		case events.KindReasoning:
			if i+1 < n {
				reach[i] = i + 1
			}
		case events.KindToolCall:
			if callAt == nil {
				callAt = make(map[string]int)
			}
			callAt[b.CallID] = i
		case events.KindToolResult:
			if j, ok := callAt[b.CallID]; ok && reach[j] < i {
				reach[j] = i
			}
		}
	}
	out := make([]span, 0, n)
	for start := 0; start < n; {
		end := reach[start]
		for k := start + 1; k <= end; k++ {
			end = max(end, reach[k])
		}
		out = append(out, span{start, end + 1})
		start = end + 1
	}
	return out
}
