package check

import (
	"slices"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// PendingCall is the Call of a finding on blocks no model call has received
// yet (Pending): an import's blocks before its first call, or what was
// added after a conversation's last call. It is not a call number
// (those count from 1).
const PendingCall = 0

// pendingRules are the rules that apply to a Turn on its own, with no
// model call to compare it with: what Pending checks.
var pendingRules = []Rule{
	RuleDuplicateSystemPrompt, RuleDuplicateBlocks, RuleReasoningWithoutFollower,
	RuleToolCallWithoutResult, RuleToolResultWithoutCall, RuleRoleMarkerInUntrustedText,
}

// Pending checks the Turn a conversation holds where no model call has
// received it yet, so that an auditor sees a planted or broken import (or
// a fault added after the last call) before a model ever receives it. It
// applies the rules of one input (pendingRules) to turn, the conversation
// as fed so far (nil: Feed's own projection), and returns their findings
// with Call PendingCall and N n, the position of the last event fed. It
// returns none when the Turn is exactly the last call's input, and leaves
// out a fault the last call's input already had (it was reported there).
// It changes nothing: feeding may go on after it.
func (c *Checker) Pending(n int, turn *projector.Turn) []Finding {
	if turn == nil {
		turn = c.turn
	}
	if turn == nil || len(turn.Blocks) == 0 || c.unchangedSince(turn.Blocks) {
		return nil
	}
	var fresh inputState
	var out []Finding
	awaiting := awaitingResults(turn.Blocks)
	// After a call that continued a response held on the provider's side,
	// the blocks up to it were received (by it, or by the provider's
	// earlier calls, which the log may not hold): only a fault in what
	// came after it is pending. A tool result answering a call of the
	// provider's history is not one.
	var received map[string]bool
	if c.continued >= 0 {
		received = map[string]bool{}
		for _, b := range turn.Blocks[:min(c.continued, len(turn.Blocks))] {
			received[b.ID] = true
		}
	}
	for _, f := range c.inputRules(turn.Blocks, &fresh, 0, nil) {
		if !slices.Contains(pendingRules, f.Rule) {
			continue
		}
		if f.Rule == RuleToolCallWithoutResult && allIn(f.Blocks, awaiting) {
			// The Turn ends with the model's tool calls: their results
			// come with the next request (a tool loop the app has not
			// finished, or left), which is not a fault.
			continue
		}
		if received != nil && allIn(f.Blocks, received) {
			continue
		}
		if (f.Rule == RuleDuplicateSystemPrompt || f.Rule == RuleRoleMarkerInUntrustedText) && c.prev != nil && allSent(f.Blocks, c.prev.ids) {
			// The last call received them (a prompt or a role marker
			// inside a message is looked for in new messages only, so
			// its finding is not among the reported ones): reported
			// there.
			continue
		}
		k := f.key()
		if f.Rule == RuleReasoningWithoutFollower {
			k = string(f.Rule) + "\x00" + f.Blocks[0]
		}
		if c.reported[k] {
			continue
		}
		f.Call, f.N = PendingCall, n
		if f.Blocks == nil {
			f.Blocks = []string{}
		}
		out = append(out, f)
	}
	sortFindings(out)
	return out
}

// unchangedSince reports whether in is exactly the last call's input.
func (c *Checker) unchangedSince(in []events.Block) bool {
	if c.prev == nil || len(in) != len(c.prev.ids) {
		return false
	}
	for i := range in {
		if in[i].ID != c.prev.ids[i] || contentOf(&in[i]) != c.prev.contents[i] {
			return false
		}
	}
	return true
}

// awaitingResults are the IDs of the tool calls at the end of a Turn, with
// only tool calls and results after them: calls whose results the next
// request brings.
func awaitingResults(in []events.Block) map[string]bool {
	out := map[string]bool{}
	for i := len(in) - 1; i >= 0; i-- {
		switch in[i].Kind {
		case events.KindToolCall:
			out[in[i].ID] = true
		case events.KindToolResult:
		default:
			return out
		}
	}
	return out
}

// allIn reports whether every ID of ids is in set (and there is one).
func allIn(ids []string, set map[string]bool) bool {
	for _, id := range ids {
		if !set[id] {
			return false
		}
	}
	return len(ids) > 0
}

// allSent reports whether every one of ids is among sent.
func allSent(ids, sent []string) bool {
	for _, id := range ids {
		if !slices.Contains(sent, id) {
			return false
		}
	}
	return len(ids) > 0
}
