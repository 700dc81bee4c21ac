package check

import (
	"slices"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/events"
)

func itoa(i int) string { return strconv.Itoa(i) }

// inputRules applies the rules that need one input only, and
// reasoning_altered. st is what the previous call left; the first same blocks of
// in are the previous call's, whose findings on reasoning blocks are in
// c.carried; carry (nil: none) gets this call's, for the next.
func (c *Checker) inputRules(in []events.Block, st *inputState, same int, carry map[string][]Finding) []Finding {
	var fs []Finding
	fs = append(fs, c.duplicatePrompts(in)...)
	fs = append(fs, promptsInMessages(in, same)...)
	fs = append(fs, c.roleMarkers(in, same)...)
	st.runs.inserted, st.runs.copied = c.inserted, c.copied
	fs = append(fs, duplicateRuns(in, st.runs.update(in, same))...)
	fs = append(fs, c.reasoningRules(in, same, carry)...)
	fs = append(fs, st.tools.update(in, same)...)
	return fs
}

// inputState is what the rules of one input keep from one call to the
// next, so that a call costs what is new in its input.
type inputState struct {
	runs  runScanner
	tools pairing
}

// reasoningRules applies reasoning_without_follower and reasoning_altered
// to each reasoning block. A block that, with its follower (after the row
// of reasoning it begins, see rowEnd), is in the unchanged prefix has the findings it had at the previous call, unless
// they name a block past the prefix: its place may have changed (a
// system prompt inserted before it), and the finding says where it is.
func (c *Checker) reasoningRules(in []events.Block, same int, carry map[string][]Finding) []Finding {
	var fs []Finding
	var pos map[string]int
	for i := range in {
		if in[i].Kind != events.KindReasoning {
			continue
		}
		var these []Finding
		if c.rowEnd(in, i) < same && inPrefix(c.carried[in[i].ID], in, same, &pos) {
			these = c.carried[in[i].ID]
		} else {
			these = c.reasoningFollower(in, i, &pos)
			these = append(these, c.reasoningAltered(in, i)...)
		}
		if len(these) > 0 && carry != nil {
			carry[in[i].ID] = these
		}
		fs = append(fs, these...)
	}
	slices.SortStableFunc(fs, func(a, b Finding) int { return slices.Index(Rules, a.Rule) - slices.Index(Rules, b.Rule) })
	return fs
}

// minPromptInMessage is the shortest system text looked for inside
// messages: a short prompt ("be brief") is words a user may write.
const minPromptInMessage = 24

// promptsInMessages: a user message or tool result past the first same
// blocks (those were looked at by an earlier call) holds a system block's
// whole text, as a history flattened into one message ("System: ...
// User: ...") re-sends the prompt: a duplicate system prompt, in text that
// is not trusted.
func promptsInMessages(in []events.Block, same int) []Finding {
	var fs []Finding
	var looked map[string]bool
	for i := range in {
		s := &in[i]
		if s.Kind != events.KindSystem || len(s.Text) < minPromptInMessage {
			continue
		}
		// A message holding the text is one fault, named with the first
		// system block of that text, however many repeat it.
		if looked[s.Text] {
			continue
		}
		if looked == nil {
			looked = map[string]bool{}
		}
		looked[s.Text] = true
		for j := max(same, i+1); j < len(in); j++ {
			m := &in[j]
			if (m.Kind == events.KindUser || m.Kind == events.KindToolResult) && strings.Contains(m.Text, s.Text) {
				fs = append(fs, Finding{Rule: RuleDuplicateSystemPrompt, Blocks: ids(in, i, j),
					Detail: blockAt(in, j) + " holds the whole text of " + blockAt(in, i) + " (" + itoa(len(s.Text)) +
						" bytes): the system prompt sent again inside a message, as a history flattened into one message does"})
			}
		}
	}
	return fs
}

// inPrefix reports whether every block fs name is among in[:same]. pos
// indexes in, built once when needed.
func inPrefix(fs []Finding, in []events.Block, same int, pos *map[string]int) bool {
	for _, f := range fs {
		for _, id := range f.Blocks {
			if *pos == nil {
				*pos = positions(in)
			}
			if j, ok := (*pos)[id]; !ok || j >= same {
				return false
			}
		}
	}
	return true
}

// positions maps each block's ID to its index in in.
func positions(in []events.Block) map[string]int {
	pos := make(map[string]int, len(in))
	for j := range in {
		pos[in[j].ID] = j
	}
	return pos
}

// duplicatePrompts: more than one block acting as the system prompt, or
// two system blocks with the same text, or a system block the client
// wrote as parts two of which have the same text (repeatedParts). The
// first system block is the active prompt
// (projector.Turn.SystemPrompt); a later system block acts
// as a prompt too when a prompt writer inserted it (a systemprompt.set by
// any actor but an import), except the global prompt's block, which is
// the one documented second system block, and the parts a role split cut
// from one prompt. An imported file's later system or developer messages,
// and those a fork copied, are messages in the conversation, not prompts.
// One fault is one finding: a second prompt that repeats the first's text
// is reported once, its finding saying both.
func (c *Checker) duplicatePrompts(in []events.Block) []Finding {
	var acting []int
	var same [][2]int // a system block's index, and the earlier one with its text
	var fs []Finding
	text := map[string]int{}
	first := true
	for i := range in {
		b := &in[i]
		if b.Kind != events.KindSystem {
			continue
		}
		if f, ok := c.repeatedParts(in, i); ok {
			fs = append(fs, f)
		}
		if j, ok := text[b.Text]; ok {
			same = append(same, [2]int{i, j})
		} else {
			text[b.Text] = i
		}
		global := b.Meta[metaGlobalPromptID] != ""
		part := b.Meta[metaRolesSplitFrom] != "" && b.Meta[metaRolesSplitFrom] != b.ID
		if global || part {
			continue
		}
		if first {
			first = false
			acting = append(acting, i)
			continue
		}
		if o := c.origin[b.ID]; o != "" && o != actorImport {
			acting = append(acting, i)
		}
	}
	twoActing := len(acting) > 1
	var also string
	for _, p := range same {
		d := blockAt(in, p[0]) + " has the same text as " + blockAt(in, p[1]) + " (" + itoa(len(in[p[0]].Text)) + " bytes)"
		if twoActing && slices.Contains(acting, p[0]) && slices.Contains(acting, p[1]) {
			also += "; " + d
			continue
		}
		fs = append(fs, Finding{Rule: RuleDuplicateSystemPrompt, Blocks: ids(in, p[1], p[0]), Detail: d})
	}
	if twoActing {
		// Each named with who set it, the first too: the block that
		// took the first place is as often the intruder as the one
		// after it.
		d := blockAt(in, acting[0])
		if o := c.origin[in[acting[0]].ID]; o != "" {
			d += " (set by " + strconv.Quote(o) + ")"
		}
		d += " is the system prompt, and "
		for k, i := range acting[1:] {
			if k > 0 {
				d += ", "
			}
			d += blockAt(in, i) + " (set by " + strconv.Quote(c.origin[in[i].ID]) + ")"
		}
		d += " acts as one too" + also
		fs = append(fs, Finding{Rule: RuleDuplicateSystemPrompt, Blocks: ids(in, acting...), Detail: d})
	}
	return fs
}

// duplicateRuns reports the runs (see Runs) of an input.
func duplicateRuns(in []events.Block, runs []Run) []Finding {
	var fs []Finding
	for _, r := range runs {
		a, b := r.First, r.Again
		fs = append(fs, Finding{Rule: RuleDuplicateBlocks, Blocks: ids(in, append(slices.Clone(a), b...)...),
			Detail: "blocks " + span(in, b) + " repeat blocks " + span(in, a) + ": a run of " + itoa(len(a)) + " blocks sent twice"})
	}
	return fs
}

// reasoningFollower: the reasoning block at i must be immediately
// followed by model text or a tool call, and by the one the model produced
// after it when that block is in the input. Reasoning the model produced
// in a row (Anthropic's thinking, then redacted thinking) stays a row: the
// block after the row must then be its follower. pos indexes in, built
// once when needed.
func (c *Checker) reasoningFollower(in []events.Block, i int, pos *map[string]int) []Finding {
	j := c.rowEnd(in, i)
	after := ""
	if j > i+1 {
		after = " and the reasoning the model produced after it (" + blockAt(in, j-1) + ")"
	}
	switch {
	case j == len(in) && after == "":
		return []Finding{{Rule: RuleReasoningWithoutFollower, Blocks: ids(in, i),
			Detail: blockAt(in, i) + " is the input's last block; it must be immediately followed by the model text or tool call it produced"}}
	case j == len(in):
		return []Finding{{Rule: RuleReasoningWithoutFollower, Blocks: ids(in, i, j-1),
			Detail: blockAt(in, i) + after + " end the input; they must be immediately followed by the model text or tool call they produced"}}
	case in[j].Kind != events.KindLLMText && in[j].Kind != events.KindToolCall:
		return []Finding{{Rule: RuleReasoningWithoutFollower, Blocks: ids(in, i, j),
			Detail: blockAt(in, i) + after + " is followed by " + blockAt(in, j) + "; it must be immediately followed by the model text or tool call it produced"}}
	case j > i+1:
		return nil // the row's last block answers for what follows it
	}
	f := c.follower[in[i].ID]
	if f == "" || f == in[i+1].ID {
		return nil
	}
	if *pos == nil {
		*pos = positions(in)
	}
	if j, ok := (*pos)[f]; ok {
		return []Finding{{Rule: RuleReasoningWithoutFollower, Blocks: ids(in, i, j),
			Detail: blockAt(in, i) + " is followed by " + blockAt(in, i+1) + ", not by " + blockAt(in, j) + ", which the model produced after it"}}
	}
	return nil
}

// rowEnd is the index of the first block after the row of reasoning that
// in[i] begins: reasoning blocks the model produced one after the other.
func (c *Checker) rowEnd(in []events.Block, i int) int {
	j := i + 1
	for j < len(in) && in[j].Kind == events.KindReasoning && c.follower[in[j-1].ID] == in[j].ID {
		j++
	}
	return j
}

// toolPairs: every tool call is answered by a result later in the input,
// and every result answers an earlier call. The input is what a model
// receives, so a call still pending there is a fault (providers reject
// it), unlike at the end of a Turn the tool loop has not run on yet.
func toolPairs(in []events.Block) []Finding {
	var p pairing
	return p.update(in, 0)
}

// pairing is toolPairs for the inputs of one conversation, one call after
// the other: the pairs of the unchanged prefix are kept, and only the new
// blocks are paired.
type pairing struct {
	upto    int            // blocks paired
	calls   map[string]int // call ID -> index of its first call
	pending map[string]int // calls not answered yet -> index
	orphans []Finding      // results without a call
}

func (p *pairing) update(in []events.Block, same int) []Finding {
	if same < p.upto || p.calls == nil {
		*p = pairing{calls: map[string]int{}, pending: map[string]int{}}
	}
	for i := p.upto; i < len(in); i++ {
		b := &in[i]
		switch b.Kind {
		case events.KindToolCall:
			if _, ok := p.calls[b.CallID]; !ok {
				p.calls[b.CallID] = i
				p.pending[b.CallID] = i
			}
		case events.KindToolResult:
			if _, ok := p.calls[b.CallID]; !ok {
				p.orphans = append(p.orphans, Finding{Rule: RuleToolResultWithoutCall, Blocks: ids(in, i),
					Detail: blockAt(in, i) + " answers call_id " + strconv.Quote(b.CallID) + ", which no earlier tool call of the input made"})
				continue
			}
			delete(p.pending, b.CallID)
		}
	}
	p.upto = len(in)
	fs := slices.Clone(p.orphans)
	if len(p.pending) == 0 {
		return fs
	}
	open := make([]int, 0, len(p.pending))
	for _, i := range p.pending {
		open = append(open, i)
	}
	slices.Sort(open)
	for _, i := range open {
		fs = append(fs, Finding{Rule: RuleToolCallWithoutResult, Blocks: ids(in, i),
			Detail: blockAt(in, i) + " (call_id " + strconv.Quote(in[i].CallID) + ", tool " + strconv.Quote(in[i].ToolName) + ") has no tool result after it in the input"})
	}
	return fs
}

// span names the blocks at idx (ascending) by first and last index and ID.
func span(in []events.Block, idx []int) string {
	f, l := idx[0], idx[len(idx)-1]
	return itoa(f) + ".." + itoa(l) + " (" + in[f].ID + ".." + in[l].ID + ")"
}
