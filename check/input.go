package check

import (
	"slices"
	"strconv"

	"github.com/turnlog/turnlog/events"
)

func itoa(i int) string { return strconv.Itoa(i) }

// inputRules applies the rules that need one input only.
func (c *Checker) inputRules(in []events.Block) []Finding {
	var fs []Finding
	fs = append(fs, c.duplicatePrompts(in)...)
	fs = append(fs, duplicateRuns(in)...)
	fs = append(fs, c.reasoningFollowers(in)...)
	fs = append(fs, toolPairs(in)...)
	return fs
}

// duplicatePrompts: more than one block acting as the system prompt, or
// two system blocks with the same text. The first system block is the
// active prompt (projector.Turn.SystemPrompt); a later system block acts
// as a prompt too when a prompt writer inserted it (a systemprompt.set by
// any actor but an import), except the global prompt's block, which is
// the one documented second system block, and the parts a role split cut
// from one prompt. An imported file's later system or developer messages,
// and those a fork copied, are messages in the conversation, not prompts.
func (c *Checker) duplicatePrompts(in []events.Block) []Finding {
	var fs []Finding
	var acting []int
	text := map[string]int{}
	first := true
	for i := range in {
		b := &in[i]
		if b.Kind != events.KindSystem {
			continue
		}
		if j, ok := text[b.Text]; ok {
			fs = append(fs, Finding{Rule: RuleDuplicateSystemPrompt, Blocks: ids(in, j, i),
				Detail: blockAt(in, i) + " has the same text as " + blockAt(in, j) + " (" + itoa(len(b.Text)) + " bytes)"})
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
	if len(acting) > 1 {
		d := blockAt(in, acting[0]) + " is the system prompt, and "
		for k, i := range acting[1:] {
			if k > 0 {
				d += ", "
			}
			d += blockAt(in, i) + " (set by " + strconv.Quote(c.origin[in[i].ID]) + ")"
		}
		d += " acts as one too"
		fs = append(fs, Finding{Rule: RuleDuplicateSystemPrompt, Blocks: ids(in, acting...), Detail: d})
	}
	return fs
}

// duplicateRuns reports the runs Runs finds.
func duplicateRuns(in []events.Block) []Finding {
	var fs []Finding
	for _, r := range Runs(in) {
		a, b := r.First, r.Again
		fs = append(fs, Finding{Rule: RuleDuplicateBlocks, Blocks: ids(in, append(slices.Clone(a), b...)...),
			Detail: "blocks " + span(in, b) + " repeat blocks " + span(in, a) + ": a run of " + itoa(len(a)) + " blocks sent twice"})
	}
	return fs
}

// reasoningFollowers: a reasoning block must be immediately followed by
// model text or a tool call, and by the one the model produced after it
// when that block is in the input.
func (c *Checker) reasoningFollowers(in []events.Block) []Finding {
	var fs []Finding
	var pos map[string]int
	for i := range in {
		if in[i].Kind != events.KindReasoning {
			continue
		}
		switch {
		case i+1 == len(in):
			fs = append(fs, Finding{Rule: RuleReasoningWithoutFollower, Blocks: ids(in, i),
				Detail: blockAt(in, i) + " is the input's last block; it must be immediately followed by the model text or tool call it produced"})
			continue
		case in[i+1].Kind != events.KindLLMText && in[i+1].Kind != events.KindToolCall:
			fs = append(fs, Finding{Rule: RuleReasoningWithoutFollower, Blocks: ids(in, i, i+1),
				Detail: blockAt(in, i) + " is followed by " + blockAt(in, i+1) + "; it must be immediately followed by the model text or tool call it produced"})
			continue
		}
		f := c.follower[in[i].ID]
		if f == "" || f == in[i+1].ID {
			continue
		}
		if pos == nil {
			pos = make(map[string]int, len(in))
			for j := range in {
				pos[in[j].ID] = j
			}
		}
		if j, ok := pos[f]; ok {
			fs = append(fs, Finding{Rule: RuleReasoningWithoutFollower, Blocks: ids(in, i, j),
				Detail: blockAt(in, i) + " is followed by " + blockAt(in, i+1) + ", not by " + blockAt(in, j) + ", which the model produced after it"})
		}
	}
	return fs
}

// toolPairs: every tool call is answered by a result later in the input,
// and every result answers an earlier call. The input is what a model
// receives, so a call still pending there is a fault (providers reject
// it), unlike at the end of a Turn the tool loop has not run on yet.
func toolPairs(in []events.Block) []Finding {
	var fs []Finding
	calls := map[string]int{}
	answered := map[string]bool{}
	var order []int
	for i := range in {
		b := &in[i]
		switch b.Kind {
		case events.KindToolCall:
			if _, ok := calls[b.CallID]; !ok {
				calls[b.CallID] = i
				order = append(order, i)
			}
		case events.KindToolResult:
			if _, ok := calls[b.CallID]; !ok {
				fs = append(fs, Finding{Rule: RuleToolResultWithoutCall, Blocks: ids(in, i),
					Detail: blockAt(in, i) + " answers call_id " + strconv.Quote(b.CallID) + ", which no earlier tool call of the input made"})
				continue
			}
			answered[b.CallID] = true
		}
	}
	for _, i := range order {
		if !answered[in[i].CallID] {
			fs = append(fs, Finding{Rule: RuleToolCallWithoutResult, Blocks: ids(in, i),
				Detail: blockAt(in, i) + " (call_id " + strconv.Quote(in[i].CallID) + ", tool " + strconv.Quote(in[i].ToolName) + ") has no tool result after it in the input"})
		}
	}
	return fs
}

// span names the blocks at idx (ascending) by first and last index and ID.
func span(in []events.Block, idx []int) string {
	f, l := idx[0], idx[len(idx)-1]
	return itoa(f) + ".." + itoa(l) + " (" + in[f].ID + ".." + in[l].ID + ")"
}
