package calls

import "github.com/turnlog/turnlog/events"

// The inputs of calls whose app puts its system prompt in front of a
// history that holds it already (a middleware that does so on every
// call): Threads.find looks them up with the repeats left out.

// systemOneLess returns blocks without the first repeat of the prompt
// put in front of them: the first system block whose content an earlier
// system block holds, with the system blocks after it that repeat, in
// order, those after that earlier one (a prompt of several messages put
// in front again, as a system and a developer message); blocks itself
// when none repeats.
func systemOneLess(blocks []events.Block) []events.Block {
	seen := map[[32]byte]int{}
	for i := range blocks {
		if blocks[i].Kind != events.KindSystem {
			continue
		}
		k := Key(&blocks[i])
		j, ok := seen[k]
		if !ok {
			seen[k] = i
			continue
		}
		// blocks[j:i] is the prompt when blocks[i:] begins with it again.
		n := 1
		if p := i - j; i+p <= len(blocks) {
			n = p
			for m := range p {
				if blocks[j+m].Kind != events.KindSystem || Key(&blocks[j+m]) != Key(&blocks[i+m]) {
					n = 1
					break
				}
			}
		}
		out := make([]events.Block, 0, len(blocks)-n)
		return append(append(out, blocks[:i]...), blocks[i+n:]...)
	}
	return blocks
}

// systemOnce returns blocks without each system block whose content an
// earlier system block holds (blocks itself when none repeats).
func systemOnce(blocks []events.Block) []events.Block {
	var seen map[[32]byte]bool
	var out []events.Block
	for i := range blocks {
		if blocks[i].Kind != events.KindSystem {
			if out != nil {
				out = append(out, blocks[i])
			}
			continue
		}
		k := Key(&blocks[i])
		if seen[k] {
			if out == nil {
				out = append(make([]events.Block, 0, len(blocks)-1), blocks[:i]...)
			}
			continue
		}
		if seen == nil {
			seen = map[[32]byte]bool{}
		}
		seen[k] = true
		if out != nil {
			out = append(out, blocks[i])
		}
	}
	if out == nil {
		return blocks
	}
	return out
}
