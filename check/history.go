package check

import (
	"slices"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// reasoningAltered: the reasoning block at i has another text or
// encrypted content than the model produced (the first reasoning.appended
// of its ID, or the block a fork or import started with), or carries
// another block's signature with another text (signedCopy).
func (c *Checker) reasoningAltered(in []events.Block, i int) []Finding {
	b := &in[i]
	p, ok := c.produced[b.ID]
	if !ok {
		return nil
	}
	var what string
	switch {
	case b.Text != p.text && b.Encrypted != p.encrypted:
		what = "its text and encrypted content differ"
	case b.Text != p.text:
		what = "its text differs (" + itoa(len(p.text)) + " bytes produced, " + itoa(len(b.Text)) + " sent)"
	case b.Encrypted != p.encrypted:
		what = "its encrypted content (which holds the provider's signature) differs"
	default:
		return c.signedCopy(in, i)
	}
	return []Finding{{Rule: RuleReasoningAltered, Blocks: ids(in, i),
		Detail: blockAt(in, i) + " is not what the model produced: " + what}}
}

// history: every block the previous call sent, and every block the model
// and the tools appended since, is in this input unedited and in the same
// order, unless an allowed event says otherwise:
//   - a turn.compacted removes blocks (its summary is new);
//   - blocks.removed by an operator, or by the reasoning guard (it drops a
//     reasoning block a provider would reject, a documented repair);
//   - blocks.reordered by the ordering middleware, which places context
//     blocks by the sections the operator declared and moves whole units;
//   - a system block's text changes at a compaction (the template prompt is
//     rebuilt then) or by an operator (`turnlog prompt`, the global prompt);
//   - another choice of a call that asked for several stands in for its
//     first (choiceTaken);
//   - a tool call whose arguments were cut short comes back as an SDK
//     parsed it (unfinishedCallSent).
//
// The active system prompt is left to system_prompt_changed.
//
// The first same blocks of in are the previous call's, in place: only the
// rest is looked at. call is the call's inference.started: the blocks its
// own request added (callInput) are its input, not history.
func (c *Checker) history(in []events.Block, same int, call events.Event) []Finding {
	if c.prev == nil {
		return nil
	}
	// Most of the history is where it was: look there first, and index
	// the input only when a block is not.
	var pos map[string]int
	next := same // where the next block of history usually is
	find := func(id string) (int, bool) {
		if next < len(in) && in[next].ID == id {
			next++
			return next - 1, true
		}
		if pos == nil {
			pos = make(map[string]int, len(in))
			for i := range in {
				pos[in[i].ID] = i
			}
		}
		i, ok := pos[id]
		if ok {
			next = i + 1
		}
		return i, ok
	}
	lastUser := -1 // the index of in's last user message
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Kind == events.KindUser {
			lastUser = i
			break
		}
	}
	var fs []Finding
	var at []int // positions in in of the history kept, in history order
	var was []string
	merged := c.prefillMerged(in)
	taken := c.choiceTaken(in, call)
	check := func(id string, want content) {
		if id == c.prev.prompt {
			if next < len(in) && in[next].ID == id {
				next++
			}
			return
		}
		i, ok := find(id)
		if !ok {
			if want.kind == events.KindReasoning {
				// Reasoning of a turn the user has answered since (its
				// follower is in, and a user message after it): the
				// providers let a client leave it out, and strip it
				// from what the model reads anyway. (find missed, so pos
				// is built.)
				if f := c.rowFollower(id); f != "" {
					if j, kept := pos[f]; kept && j < lastUser {
						return
					}
				}
			}
			if _, allowed := c.since.removed[id]; !allowed && !merged[id] && !taken[id] && !c.unfinishedCallSent(in, want, call) {
				by := "by no compaction, operator or documented middleware"
				if e, ok := c.since.removedBy[id]; ok {
					by = "by " + e + "; only a compaction, an operator or the reasoning guard may remove history"
				}
				fs = append(fs, Finding{Rule: RuleHistoryRewritten, Blocks: []string{id},
					Detail: string(want.kind) + " " + id + " was removed since call " + itoa(c.prev.call) + ", " + by})
			}
			return
		}
		if got := contentOf(&in[i]); got != want && !(got.kind == events.KindSystem && want.kind == events.KindSystem && (c.since.compacted || c.since.operator)) {
			fs = append(fs, Finding{Rule: RuleHistoryRewritten, Blocks: []string{id},
				Detail: blockAt(in, i) + " was edited since call " + itoa(c.prev.call) + " (" + changed(want, got) + ")"})
		}
		at = append(at, i)
		was = append(was, id)
	}
	for k := same; k < len(c.prev.ids); k++ {
		check(c.prev.ids[k], c.prev.contents[k])
	}
	for _, id := range c.since.outputs {
		if !c.since.callInput(id, call) {
			check(id, c.since.content[id])
		}
	}
	if !c.since.ordered && !slices.IsSorted(at) {
		stable := increasing(at)
		by := "by no documented middleware"
		if len(c.since.movedBy) > 0 {
			by = "by " + strings.Join(c.since.movedBy, ", ") + "; only the ordering middleware may move history"
		}
		for k, i := range at {
			if !stable[k] {
				fs = append(fs, Finding{Rule: RuleHistoryRewritten, Blocks: []string{was[k]},
					Detail: blockAt(in, i) + " moved since call " + itoa(c.prev.call) + ", " + by})
			}
		}
	}
	return fs
}

// rowFollower is the follower of reasoning block id's row: the block the
// model produced after the reasoning blocks that follow one another from
// id (Claude's thinking, then redacted_thinking, then its text), "" when
// none is known. A client that leaves out a finished turn's reasoning
// leaves out the whole row.
func (c *Checker) rowFollower(id string) string {
	f := c.follower[id]
	for range len(c.follower) {
		next, reasoning := c.follower[f]
		if !reasoning || next == "" {
			break
		}
		f = next
	}
	return f
}

// prefillMerged returns the blocks an app sends again as one: the previous
// call's input ended with model text the app wrote itself (a prefill, as
// Anthropic documents it: the answer continues that text), and a model
// text block of in holds that text followed by the text the model
// produced, as an app joins them for its next call. Those blocks are not
// missing from the history: the joined block carries them. nil when there
// is no such block.
func (c *Checker) prefillMerged(in []events.Block) map[string]bool {
	n := len(c.prev.ids)
	if n == 0 || c.prev.contents[n-1].kind != events.KindLLMText || len(c.since.outputs) == 0 {
		return nil
	}
	texts := map[string]string{} // model texts of in, text -> ID
	for i := range in {
		if in[i].Kind == events.KindLLMText {
			texts[in[i].Text] = in[i].ID
		}
	}
	// The prefill, then the model texts that followed it, one by one (the
	// app's own blocks of this call come after them).
	text := c.prev.contents[n-1].text
	joined := []string{c.prev.ids[n-1]}
	for _, id := range c.since.outputs {
		o := c.since.content[id]
		if o.kind != events.KindLLMText {
			return nil
		}
		text += o.text
		joined = append(joined, id)
		if m, ok := texts[text]; ok && !slices.Contains(joined, m) {
			merged := make(map[string]bool, len(joined))
			for _, j := range joined {
				merged[j] = true
			}
			return merged
		}
	}
	return nil
}

// changed names the fields that differ.
func changed(a, b content) string {
	var out []string
	if a.kind != b.kind {
		out = append(out, "kind "+string(a.kind)+" -> "+string(b.kind))
	}
	if a.text != b.text {
		out = append(out, "text "+itoa(len(a.text))+" -> "+itoa(len(b.text))+" bytes")
	}
	if a.tool != b.tool || a.args != b.args {
		out = append(out, "tool or arguments")
	}
	if a.callID != b.callID {
		out = append(out, "call_id "+strconv.Quote(a.callID)+" -> "+strconv.Quote(b.callID))
	}
	if a.encrypted != b.encrypted {
		out = append(out, "encrypted content")
	}
	if a.isError != b.isError {
		out = append(out, "is_error")
	}
	s := ""
	for i, o := range out {
		if i > 0 {
			s += ", "
		}
		s += o
	}
	return s
}

// increasing marks one longest strictly increasing subsequence of s
// (patience sorting): the elements left unmarked are the fewest moves
// that explain the order.
func increasing(s []int) []bool {
	keep := make([]bool, len(s))
	var tails []int // tails[p]: index in s ending the best run of length p+1
	prev := make([]int, len(s))
	for k, v := range s {
		p, _ := slices.BinarySearchFunc(tails, v, func(t, target int) int { return s[t] - target })
		prev[k] = -1
		if p > 0 {
			prev[k] = tails[p-1]
		}
		if p == len(tails) {
			tails = append(tails, k)
		} else {
			tails[p] = k
		}
	}
	if len(tails) > 0 {
		for k := tails[len(tails)-1]; k >= 0; k = prev[k] {
			keep[k] = true
		}
	}
	return keep
}

// promptSeen is the active system prompt of one call: the block's ID and
// text ("" none), where names it for a finding's detail.
type promptSeen struct {
	call            int
	id, text, where string
	seen            bool
	// from is the call that first sent the block (after).
	from int
}

// after is cur, seen after was: its from is was's when it is the same
// block (a call that sends it again did not add it), else its own call.
func (cur promptSeen) after(was promptSeen) promptSeen {
	cur.from = cur.call
	if cur.id != "" && cur.id == was.id && was.from > 0 {
		cur.from = was.from
	}
	return cur
}

// promptOf is the active prompt of call's input in: its first system
// block.
func promptOf(call int, in []events.Block) promptSeen {
	for i := range in {
		if in[i].Kind == events.KindSystem {
			return promptSeen{call: call, id: in[i].ID, text: in[i].Text, where: blockAt(in, i), seen: true}
		}
	}
	return promptSeen{call: call, seen: true}
}

// promptChanged: the active system prompt, cur, is not the previous
// call's (another block, another text, appeared or gone) with no
// compaction and no operator change in between. cur becomes the previous
// call's.
func (c *Checker) promptChanged(cur promptSeen) []Finding {
	was, free := c.prompt, c.promptFree
	c.prompt, c.promptFree = cur.after(was), false
	if !was.seen || free {
		return nil
	}
	since := " since call " + itoa(was.call) + ", with no compaction or operator change in between; the provider's prompt cache is lost"
	switch {
	case cur.id == was.id && cur.text == was.text:
		return nil
	case was.id == "":
		return []Finding{{Rule: RuleSystemPromptChanged, Blocks: []string{cur.id}, Detail: "a system prompt appeared (" + cur.where + ")" + since}}
	case cur.id == "":
		return []Finding{{Rule: RuleSystemPromptChanged, Blocks: []string{was.id}, Detail: "the system prompt " + was.id + " is gone" + since}}
	case cur.id != was.id:
		return []Finding{{Rule: RuleSystemPromptChanged, Blocks: []string{was.id, cur.id},
			Detail: "the active system prompt is now " + cur.where + ", was " + was.id + since}}
	}
	return []Finding{{Rule: RuleSystemPromptChanged, Blocks: []string{cur.id},
		Detail: "the text of the system prompt " + cur.where + " changed (" + itoa(len(was.text)) + " -> " + itoa(len(cur.text)) + " bytes)" + since}}
}
