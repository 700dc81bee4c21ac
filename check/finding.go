package check

import (
	"slices"

	"github.com/turnlog/turnlog/events"
)

// Rule names a rule a model input must keep. The values are stable: scripts
// and `replay --check -o json` depend on them.
type Rule string

// The rules. docs/auditing-check.md says what each proves and which moves
// of history are allowed.
const (
	// RuleDuplicateSystemPrompt: more than one block acts as the
	// conversation's system prompt, or two system blocks (system or
	// developer messages) have the same text.
	RuleDuplicateSystemPrompt Rule = "duplicate_system_prompt"
	// RuleDuplicateBlocks: a run of two or more blocks is repeated within
	// one input, as when a flattened history is sent twice (see Runs).
	RuleDuplicateBlocks Rule = "duplicate_blocks"
	// RuleReasoningWithoutFollower: a reasoning block is not immediately
	// followed by the model text or tool call it produced.
	RuleReasoningWithoutFollower Rule = "reasoning_without_follower"
	// RuleReasoningAltered: a reasoning block's text or encrypted content
	// (which holds a provider's signature) differs from what the model
	// produced.
	RuleReasoningAltered Rule = "reasoning_altered"
	// RuleToolCallWithoutResult: a tool call has no result after it in the
	// same input.
	RuleToolCallWithoutResult Rule = "tool_call_without_result"
	// RuleToolResultWithoutCall: a tool result answers no earlier tool call
	// of the same input.
	RuleToolResultWithoutCall Rule = "tool_result_without_call"
	// RuleHistoryRewritten: a block that an earlier call sent (or that the
	// model produced since) was edited, removed or moved, other than by a
	// recorded compaction, an operator prompt change or a documented
	// middleware (see Allowed).
	RuleHistoryRewritten Rule = "history_rewritten"
	// RuleSystemPromptChanged: the active system prompt differs from the
	// previous call's without a compaction or an operator's change in
	// between, which breaks the provider's prompt cache.
	RuleSystemPromptChanged Rule = "system_prompt_changed"
	// RuleRoleMarkerInUntrustedText: text that is not trusted (a user's
	// message, a tool's result) holds a role marker ("System:",
	// "Assistant:" or "User:" at a line start, or a chat template's
	// role token such as "<|im_start|>system"): it speaks as another
	// role, the way an instruction is smuggled in.
	RuleRoleMarkerInUntrustedText Rule = "role_marker_in_untrusted_text"
)

// Rules lists every rule, in the order findings of one call are reported.
var Rules = []Rule{
	RuleDuplicateSystemPrompt, RuleDuplicateBlocks, RuleReasoningWithoutFollower, RuleReasoningAltered,
	RuleToolCallWithoutResult, RuleToolResultWithoutCall, RuleHistoryRewritten, RuleSystemPromptChanged,
	RuleRoleMarkerInUntrustedText,
}

// change reports whether r compares a call's input with the previous
// call's: its findings are changes made between the two, each reported at
// the call it reached, where the other rules' are faults an input holds,
// reported at the first call that holds them.
func (r Rule) change() bool { return r == RuleHistoryRewritten || r == RuleSystemPromptChanged }

// Finding is one rule a model input broke. Its JSON form is part of
// `turnlog replay --check -o json`.
type Finding struct {
	// Call numbers the conversation's model calls from 1, as `replay
	// --inference N` does (the compaction summariser's calls included);
	// N is the position of its inference.started event.
	Call int  `json:"call"`
	N    int  `json:"n"`
	Rule Rule `json:"rule"`
	// Detail says what is wrong in one line, naming blocks by ID and
	// index in the call's input.
	Detail string `json:"detail"`
	// Blocks are the IDs of the blocks concerned; never null.
	Blocks []string `json:"blocks"`
}

// key identifies a finding across calls: a fault an input still carries
// at the next call is the same finding, reported once.
func (f Finding) key() string {
	k := string(f.Rule)
	for _, b := range f.Blocks {
		k += "\x00" + b
	}
	return k
}

// blockAt names a block of an input for a finding's detail.
func blockAt(in []events.Block, i int) string {
	return string(in[i].Kind) + " " + in[i].ID + " at index " + itoa(i)
}

func ids(in []events.Block, idx ...int) []string {
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		out = append(out, in[i].ID)
	}
	return out
}

func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return slices.Index(Rules, a.Rule) - slices.Index(Rules, b.Rule)
	})
}
