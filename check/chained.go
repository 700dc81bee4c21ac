package check

import (
	"slices"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// A chained call continues a history the provider holds (the Responses
// API's previous_response_id, or a provider's conversation) and sends
// only its instructions and new items: the gateway's inference.started
// names them (InputBlocks), the rest of what the model read being on the
// provider's side. The rules are applied to what the call sent, so that a
// gateway app's injection sent in a chained call is a finding as it is in
// a call that sends its whole history.

// ChainedSkips are the rules a chained call cannot be judged by: they need
// the whole input, whose history the provider holds (a tool result there
// may answer a call of that history). The other rules judge what the call
// sent; system_prompt_changed compares its active prompt (calls.ActivePrompt)
// with the previous call's.
var ChainedSkips = []Rule{RuleHistoryRewritten, RuleToolResultWithoutCall}

// chainedInput returns the blocks a chained call sent, looked up in the
// Turn as it stood at the call, and whether p records one. A compaction's
// summary also names InputBlocks, but is made by a worker (no Gateway)
// and records its Instructions. A block the Turn no longer holds (erased)
// leaves the input nil: the call is not judged.
func chainedInput(turn *projector.Turn, p events.InferenceStarted) ([]events.Block, bool) {
	if p.Gateway == nil || p.Instructions != "" || len(p.InputBlocks) == 0 {
		return nil, false
	}
	in := make([]events.Block, 0, len(p.InputBlocks))
	for _, id := range p.InputBlocks {
		b, ok := turn.Block(id)
		if !ok {
			return nil, true
		}
		in = append(in, b)
	}
	return in, true
}

// chained checks a chained call's input, in: the rules of one input but
// ChainedSkips, and system_prompt_changed against the previous call's
// prompt. The history rules go on comparing the next call that sends its
// whole input with the previous one that did.
func (c *Checker) chained(in []events.Block, turn *projector.Turn, n int) []Finding {
	c.chainedCalls++
	c.lastOutput = ""
	if in == nil {
		return nil
	}
	var fresh inputState
	fs := slices.DeleteFunc(c.inputRules(in, &fresh, 0, nil), func(f Finding) bool { return slices.Contains(ChainedSkips, f.Rule) })
	fs = append(fs, c.chainedLeftOut(in)...)
	cur := promptSeen{call: c.calls, seen: true}
	if sp, ok := calls.ActivePrompt(turn, in, true); ok {
		cur.id, cur.text, cur.where = sp.ID, sp.Text, string(sp.Kind)+" "+sp.ID
		if i := slices.IndexFunc(in, func(b events.Block) bool { return b.ID == sp.ID }); i >= 0 {
			cur.where = blockAt(in, i)
		} else {
			cur.where += " (of the history the provider holds)"
		}
	}
	if resent(c.prompt, cur) {
		if f, ok := keptTwice(turn, in, c.prompt, cur); ok {
			fs = append(fs, f)
		}
		c.prompt, c.promptFree = cur.after(c.prompt), false
	} else {
		fs = append(fs, c.promptChanged(cur)...)
	}
	sortFindings(fs)
	return c.stamp(fs, n, c.reportedChained)
}

// leftOut is a reasoning block the gateway removed at a chained call's
// input (calls.Call.ResentFrom): by is the step of that call's events
// (callStep).
type leftOut struct{ id, by string }

// chainedLeftOut is the history_rewritten of a chained call that sends
// the items after the response it continues again without the reasoning
// the model produced among them (the Vercel AI SDK's tool loop with a
// reasoning model): the gateway removed that reasoning from the history
// (blocks.removed), since the model no longer reads it, and the model
// reads its own tool call without the reasoning that made it. Reasoning
// of a finished turn (its follower among what the call sent, a user
// message after it) may be left out, as in a call that sends its whole
// history. Each is reported once: the next call that sends its whole
// history does not find it missing again.
func (c *Checker) chainedLeftOut(in []events.Block) []Finding {
	if len(c.since.leftOut) == 0 {
		return nil
	}
	lastUser := -1
	for i := range in {
		if in[i].Kind == events.KindUser {
			lastUser = i
		}
	}
	step := callStep(c.current)
	var fs []Finding
	for _, l := range c.since.leftOut {
		if l.by != step {
			continue
		}
		c.since.removed[l.id] = calls.Actor
		f := c.rowFollower(l.id)
		if i := slices.IndexFunc(in, func(b events.Block) bool { return b.ID == f }); f != "" && i >= 0 && i < lastUser {
			continue
		}
		since := "before this call"
		if k := c.producedBy[l.id]; k > 0 {
			since = "since call " + itoa(k)
		}
		fs = append(fs, Finding{Rule: RuleHistoryRewritten, Blocks: []string{l.id},
			Detail: "reasoning " + l.id + " was removed " + since + ": the call sends the items after the response it continues again without it, so the model reads what it produced without the reasoning that led to it"})
	}
	return fs
}

// resent reports whether a chained call's prompt, cur, is the previous
// call's, was, sent again: a system or developer message of the same text
// among its new items (the Vercel AI SDK sends its system prompt so in
// every call continuing a response). The model reads the same
// instructions, and the provider's prompt cache, a prefix of the history,
// holds: no change, although the block is another one.
func resent(was, cur promptSeen) bool {
	return was.seen && was.id != "" && cur.id != "" && cur.id != was.id && cur.text == was.text
}

// keptTwice is the duplicate_system_prompt of a chained call whose
// prompt, cur, is the previous call's text, was, sent again, where the
// provider keeps a message of that text in the history it holds (a
// developer or system message, not the Responses API's instructions,
// which apply to their call alone): the model reads the prompt once more
// at each such call, as an app that appends its prompt to every request
// sends it. The held message is was's when it was one; else the first of
// that text the Turn still holds outside the call's input (a call between
// may have sent the prompt as instructions, which leaves the earlier
// message where it was).
func keptTwice(turn *projector.Turn, in []events.Block, was, cur promptSeen) (Finding, bool) {
	i := slices.IndexFunc(in, func(b events.Block) bool { return b.ID == cur.id })
	if i < 0 {
		return Finding{}, false
	}
	heldID, by := "", ""
	if prev, ok := turn.Block(was.id); ok && prev.Meta[calls.MetaField] == "" {
		heldID, by = was.id, "call "+itoa(was.from)
	} else {
		for _, b := range turn.Blocks {
			if b.Kind == events.KindSystem && b.ID != cur.id && b.Text == cur.text && b.Meta[calls.MetaField] == "" &&
				!slices.ContainsFunc(in, func(x events.Block) bool { return x.ID == b.ID }) {
				heldID, by = b.ID, "an earlier call"
				break
			}
		}
	}
	if heldID == "" {
		return Finding{}, false
	}
	return Finding{Rule: RuleDuplicateSystemPrompt, Blocks: []string{heldID, cur.id},
		Detail: blockAt(in, i) + " has the same text as system " + heldID + " (" + itoa(len(cur.text)) + " bytes), which " + by +
			" sent as a message: the provider keeps that message in the history this call continues, so the model reads the prompt twice (send it as instructions, or in the first call alone)"}, true
}

// Chained counts the chained calls fed so far (see ChainedSkips): they are
// among Calls, checked on what they sent only.
func (c *Checker) Chained() int { return c.chainedCalls }
