package check

import "github.com/turnlog/turnlog/events"

// Run is a run of blocks whose content comes again, block for block,
// later in the same input: First and Again are the indexes of the two
// copies' blocks, ascending, of equal length, the first copy wholly before
// the second. Reasoning blocks are left out of both: a flattened history
// often drops them.
type Run struct {
	First, Again []int
}

// candidates is how many earlier places of one pair of contents Runs
// tries: enough for any real repetition, and a bound on the work for a
// Turn made of one repeated block.
const candidates = 8

// Runs finds the runs of two or more blocks that are repeated within
// blocks and are a fault, as when a flattened history is sent twice. A run
// is a fault when its repetition cannot be a conversation going on: it
// holds two user blocks (or two model texts) with different texts, so it
// spans more than one exchange, or a tool call or result (call IDs are
// unique to a call). Three identical questions with identical answers
// ("same again") are a conversation, not a fault; a one-exchange history
// sent twice cannot be told from them and is not reported. Content is what
// a model reads: kind, text, tool, arguments, call ID, encrypted payload,
// error flag; reasoning blocks are skipped. Runs do not overlap, and one
// repeat is reported once, at its longest; O(len(blocks)).
func Runs(blocks []events.Block) []Run {
	var at []int // indexes of the blocks compared
	for i := range blocks {
		if blocks[i].Kind != events.KindReasoning {
			at = append(at, i)
		}
	}
	if len(at) < 4 {
		return nil
	}
	keys := make([]int, len(at))
	byContent := make(map[content]int, len(at))
	for k, i := range at {
		c := contentOf(&blocks[i])
		id, ok := byContent[c]
		if !ok {
			id = len(byContent)
			byContent[c] = id
		}
		keys[k] = id
	}
	pairs := make(map[[2]int][]int, len(keys))
	remember := func(i int) {
		if i+1 >= len(keys) {
			return
		}
		p := [2]int{keys[i], keys[i+1]}
		s := pairs[p]
		if len(s) == candidates {
			s = s[1:]
		}
		pairs[p] = append(s, i)
	}
	var out []Run
	for i := 0; i+1 < len(keys); {
		bestJ, bestN := 0, 0
		for _, j := range pairs[[2]int{keys[i], keys[i+1]}] {
			n := 0
			for i+n < len(keys) && j+n < i && keys[j+n] == keys[i+n] {
				n++
			}
			if n >= 2 && n > bestN && fault(blocks, at[j:j+n]) {
				bestJ, bestN = j, n
			}
		}
		if bestN == 0 {
			remember(i)
			i++
			continue
		}
		out = append(out, Run{First: at[bestJ : bestJ+bestN : bestJ+bestN], Again: at[i : i+bestN : i+bestN]})
		for k := i; k < i+bestN; k++ {
			remember(k)
		}
		i += bestN
	}
	return out
}

// fault reports whether a repeated run (the blocks at these indexes) is a
// fault (see Runs).
func fault(blocks []events.Block, run []int) bool {
	var user, model string
	var users, models bool
	for _, i := range run {
		b := &blocks[i]
		switch {
		case b.CallID != "":
			return true
		case b.Kind == events.KindUser:
			if users && b.Text != user {
				return true
			}
			user, users = b.Text, true
		case b.Kind == events.KindLLMText:
			if models && b.Text != model {
				return true
			}
			model, models = b.Text, true
		}
	}
	return false
}
