package check

import (
	"slices"

	"github.com/turnlog/turnlog/events"
)

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
// error flag, the digest of its other content (events.MetaParts: images,
// files, built-in tools' items); reasoning blocks are skipped. Runs do not overlap, and one
// repeat is reported once, at its longest; O(len(blocks)).
func Runs(blocks []events.Block) []Run {
	var s runScanner
	return s.update(blocks, 0)
}

// runScanner is Runs for the inputs of one conversation, one call after
// the other: most of an input is the previous one's, so the scan resumes
// where the blocks begin to differ instead of starting over. The result is
// Runs' (up to which of more than candidates earlier places is tried).
type runScanner struct {
	blocks int   // how many blocks the last input had
	at     []int // indexes of the compared blocks (not reasoning)
	keys   []int // their contents, interned
	ids    map[content]int
	pairs  map[[2]int][]int // pair of keys -> the places it starts at
	steps  []runStep        // the scan's decisions, in order
	// inserted names the blocks a middleware inserted (nil: none known):
	// a repeat whose second copy holds a model text inserted where the
	// first holds the model's own is a fault, however short (copy), and
	// a block inserted in both copies is the middleware's, said anew, not
	// the user's or the model's (fault). A block's origin never changes,
	// so decisions kept stay true.
	inserted map[string]bool
	// copied names the inserted model texts that copy one the Turn held
	// when they were put in: a repeat whose first copy holds one where
	// the second holds the model's own is a copy too (history copied
	// before itself).
	copied map[string]bool
}

// runStep is one decision of the scan: at key position i, a run of n (0:
// none) found, having read keys up to reach.
type runStep struct {
	i, n, reach int
	run         Run
}

// update scans blocks, whose first same blocks are those of the previous
// input (same IDs and content), and returns the runs it finds.
func (s *runScanner) update(blocks []events.Block, same int) []Run {
	// Keys kept: those of the blocks in the unchanged prefix.
	kept := 0
	if same > 0 && same <= s.blocks {
		for kept < len(s.at) && s.at[kept] < same {
			kept++
		}
	}
	if kept == 0 || len(s.ids) > 4*len(blocks)+64 {
		// Start over, and let the interned contents of blocks long gone
		// go with the old map.
		*s = runScanner{ids: make(map[content]int, len(blocks)), pairs: make(map[[2]int][]int, len(blocks)), inserted: s.inserted, copied: s.copied}
		kept = 0
	}
	// Decisions kept: those that read kept keys only.
	steps := len(s.steps)
	for steps > 0 && s.steps[steps-1].reach >= kept {
		steps--
	}
	s.steps = s.steps[:steps]
	from := 0
	if kept > 0 {
		from = s.at[kept-1] + 1
	}
	s.at, s.keys = s.at[:kept], s.keys[:kept]
	for i := from; i < len(blocks); i++ {
		if blocks[i].Kind == events.KindReasoning {
			continue
		}
		c := contentOf(&blocks[i])
		id, ok := s.ids[c]
		if !ok {
			id = len(s.ids)
			s.ids[c] = id
		}
		s.at = append(s.at, i)
		s.keys = append(s.keys, id)
	}
	s.blocks = len(blocks)
	s.scan(blocks)
	var out []Run
	for _, st := range s.steps {
		if st.n > 0 {
			out = append(out, st.run)
		}
	}
	return out
}

// remember records that the pair of keys at position i starts there. A
// place left from a scan that was undone is harmless: its keys no longer
// match, or it is the same place again.
func (s *runScanner) remember(i int) {
	if i+1 >= len(s.keys) {
		return
	}
	p := [2]int{s.keys[i], s.keys[i+1]}
	l := s.pairs[p]
	if n := len(l); n > 0 && l[n-1] >= i {
		// Undone places at or after i go; i comes again below.
		for n > 0 && l[n-1] >= i {
			n--
		}
		l = l[:n]
	}
	if len(l) == candidates {
		l = l[1:]
	}
	s.pairs[p] = append(l, i)
}

// scan goes on from the last decision kept to the end of the keys.
func (s *runScanner) scan(blocks []events.Block) {
	i := 0
	if n := len(s.steps); n > 0 {
		last := s.steps[n-1]
		i = last.i + max(last.n, 1)
	}
	keys := s.keys
	for i+1 < len(keys) {
		bestJ, bestN, reach := 0, 0, i+1
		for _, j := range s.pairs[[2]int{keys[i], keys[i+1]}] {
			n := 0
			for i+n < len(keys) && j+n < i && keys[j+n] == keys[i+n] {
				n++
			}
			reach = max(reach, i+n)
			if n >= 2 && n > bestN && (s.fault(blocks, s.at[j:j+n], s.at[i:i+n]) || s.copy(blocks, s.at[j:j+n], s.at[i:i+n])) {
				bestJ, bestN = j, n
			}
		}
		if bestN == 0 {
			s.steps = append(s.steps, runStep{i: i, reach: reach})
			s.remember(i)
			i++
			continue
		}
		s.steps = append(s.steps, runStep{i: i, n: bestN, reach: reach,
			run: Run{First: slices.Clone(s.at[bestJ : bestJ+bestN]), Again: slices.Clone(s.at[i : i+bestN])}})
		for k := i; k < i+bestN; k++ {
			s.remember(k)
		}
		i += bestN
	}
}

// copy reports whether the second copy of a repeated run (again, the
// blocks at these indexes; first, the first copy's) holds model text a
// middleware inserted where the first holds the model's own: the model
// did not say it again, its answer was copied. A text inserted in both
// (a prefill a middleware puts before each answer, a user who says the
// same again) is no copy: the middleware put it in anew for that call.
// The copy may also come first (put after the prompt, before the history
// it copies): the first copy's text is then inserted as a copy of one the
// model had said (copied), where the second holds the model's own; an
// example inserted before the model said the same is none.
func (s *runScanner) copy(blocks []events.Block, first, again []int) bool {
	for k, i := range again {
		if blocks[i].Kind != events.KindLLMText {
			continue
		}
		j := first[k]
		if s.inserted[blocks[i].ID] && !s.inserted[blocks[j].ID] || s.copied[blocks[j].ID] && !s.inserted[blocks[i].ID] {
			return true
		}
	}
	return false
}

// fault reports whether a repeated run (first, the blocks at these
// indexes, said again at again) is a fault (see Runs). A text a
// middleware inserted in both copies (a reminder it puts before each
// message) is its own, put in anew for each call: it is no user's or
// model's text said twice, and does not make a run of one user's words a
// copy. Such texts are judged among themselves: a middleware's own two
// exchanges put in twice (a few-shot middleware inserting its examples
// again at each call) are read twice by the model all the same.
func (s *runScanner) fault(blocks []events.Block, first, again []int) bool {
	var said, anew exchanges
	for k, i := range first {
		b := &blocks[i]
		if b.CallID != "" && !events.IsLegacyFunctionCallID(b.CallID) {
			// A call ID is unique to its call: a run holding one was sent
			// twice. (A legacy function call's is the function's name,
			// which calls of the same function share: such a run is judged
			// by its texts.)
			return true
		}
		e := &said
		if s.inserted[b.ID] && s.inserted[blocks[again[k]].ID] {
			e = &anew
		}
		if e.another(b) {
			return true
		}
	}
	return false
}

// exchanges follows the user and model texts of a run, to tell one
// exchange said again from a run of several.
type exchanges struct {
	user, model   string
	users, models bool
}

// another notes b and reports whether it begins another exchange: a user
// or model text other than the run's first of its kind.
func (e *exchanges) another(b *events.Block) bool {
	switch b.Kind {
	case events.KindUser:
		if e.users && b.Text != e.user {
			return true
		}
		e.user, e.users = b.Text, true
	case events.KindLLMText:
		if e.models && b.Text != e.model {
			return true
		}
		e.model, e.models = b.Text, true
	}
	return false
}
