package replay

import (
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Op names what happened to one block, or one data or meta key, between
// Turn A and Turn B. The values are part of `diff-turns -o json`.
type Op string

// Ops. A block appears in at most one Change: a block that both moved and
// changed is one OpMoved change whose Fields are non-empty.
const (
	OpAdded   Op = "added"   // only in B
	OpRemoved Op = "removed" // only in A
	OpChanged Op = "changed" // in both, same relative position, different content
	OpMoved   Op = "moved"   // in both, relative position changed (content may too)
)

// Side says which of the two compared Turns a finding is about, so a
// duplicate or violation can be traced to `A[3]` or `B[3]`.
type Side string

// Sides.
const (
	SideA Side = "A"
	SideB Side = "B"
)

// Rule names an adjacency rule that providers enforce on the blocks they
// receive. The values are stable codes for tools.
type Rule string

// Rules checked on both sides.
const (
	// RuleReasoningFollower: a reasoning block must be immediately
	// followed by llm_text or tool_call (providers reject a reasoning item
	// without its follower).
	RuleReasoningFollower Rule = "reasoning_without_follower"
	// RuleResultWithoutCall: a tool_result's call_id must name an earlier
	// tool_call.
	RuleResultWithoutCall Rule = "result_without_call"
	// RuleCallWithoutResult: a tool_call must be answered before the next
	// user block. A call still pending at the end of the Turn is not a
	// violation: the tool loop may not have run yet.
	RuleCallWithoutResult Rule = "call_without_result"
)

// Result is the block-level difference between Turn A and Turn B, as
// `turnlog diff-turns A B` prints it. Its JSON form (`-o json`) is stable
// output: slices are never null, indexes are 0-based, -1 means "none".
type Result struct {
	// Changes lists every block that was added, removed, changed or moved,
	// in B's order; a removed block sits after the unmoved block that
	// preceded it in A. Each block appears at most once.
	Changes []Change `json:"changes"`
	// SystemPrompt is set when the active system prompt (the first system
	// block) differs: it appeared or disappeared, another block became the
	// active one, its index changed, or its content did. It is what an
	// auditor asks first, so it is reported apart from Changes.
	SystemPrompt *SystemPromptChange `json:"system_prompt,omitempty"`
	// Data lists Turn.Data keys added, removed or changed, sorted by key.
	Data []KeyChange `json:"data"`
	// Duplicates lists, per side, block IDs that occur more than once,
	// system blocks with identical text (two identical system prompts) and
	// runs of blocks repeated as a history sent twice (check.Runs). They
	// are reported but do not by themselves make the Turns differ.
	Duplicates []Duplicate `json:"duplicates"`
	// Violations lists, per side, adjacency rules a provider would reject
	// (see Rule). Like Duplicates, they do not make the Turns differ.
	Violations []Violation `json:"violations"`
	// MatchedByContent counts blocks paired because they have the same
	// kind and content although their IDs differ or are empty: Turns
	// exported by other tools get fresh IDs, and such a pair counts as the
	// same block. Compare projector.Hash values to tell identical IDs apart.
	MatchedByContent int `json:"matched_by_content"`
}

// Equal reports whether the two Turns carry the same content: the same
// blocks in the same order with the same kind, text, meta, trust and tool
// fields, and the same Data. Block IDs of content-matched blocks are not
// compared (see MatchedByContent); duplicates and violations are findings
// about each side and do not make Turns unequal. diff-turns exits 0 exactly
// when Equal is true.
func (r Result) Equal() bool {
	return len(r.Changes) == 0 && r.SystemPrompt == nil && len(r.Data) == 0
}

// Change is one block that differs between A and B.
type Change struct {
	// Op is what happened; OpMoved with non-empty Fields means the block
	// moved and its content changed.
	Op Op `json:"op"`
	// ID is the block's ID in B, or in A when it was removed.
	ID string `json:"id"`
	// FromID is the block's ID in A when it differs from ID (the block was
	// matched by content); empty otherwise.
	FromID string `json:"from_id,omitempty"`
	// Kind is the block's kind in B, or in A when it was removed.
	Kind events.Kind `json:"kind"`
	// FromIndex is the block's index in A, -1 when added.
	FromIndex int `json:"from_index"`
	// ToIndex is the block's index in B, -1 when removed.
	ToIndex int `json:"to_index"`
	// Fields names the block fields whose values differ, by their JSON
	// names: kind, text, trust, meta, call_id, tool, arguments, is_error,
	// encrypted. Empty for added, removed and purely moved blocks.
	Fields []string `json:"fields,omitempty"`
	// TextDiff is a unified diff (A to B) of the text, followed by one of
	// the tool arguments when those differ; empty when neither does.
	TextDiff string `json:"text_diff,omitempty"`
	// Meta details a meta change key by key, sorted by key.
	Meta []KeyChange `json:"meta,omitempty"`
	// Block is the block as it is in B, or in A when removed.
	Block events.Block `json:"block"`
	// Before is the block as it was in A, set only when Fields is
	// non-empty, so every changed value can be read on both sides.
	Before *events.Block `json:"before,omitempty"`
}

// SystemPromptChange describes how the active system prompt (the first
// system block, see projector.Turn.SystemPrompt) differs between A and B.
type SystemPromptChange struct {
	// Fields says what differs: "added" (only B has a system prompt),
	// "removed" (only A has one), "id" (another block is the active prompt
	// in B), "index" (its position changed), and any block field names as
	// in Change.Fields (text, meta, trust, ...).
	Fields []string `json:"fields"`
	// FromID and FromIndex locate the active prompt in A ("" and -1 if none).
	FromID    string `json:"from_id"`
	FromIndex int    `json:"from_index"`
	// ToID and ToIndex locate the active prompt in B ("" and -1 if none).
	ToID    string `json:"to_id"`
	ToIndex int    `json:"to_index"`
	// TextDiff is a unified diff of the two prompts' texts when they differ.
	TextDiff string `json:"text_diff,omitempty"`
}

// KeyChange is one key of a string map (Turn.Data or a block's Meta) that
// differs between A and B.
type KeyChange struct {
	Key string `json:"key"`
	// Op is OpAdded, OpRemoved or OpChanged.
	Op Op `json:"op"`
	// From is the value in A (empty when added), To the value in B (empty
	// when removed).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Duplicate is a group of blocks on one side that should not coexist: the
// same block ID more than once (the projector refuses that, so it points at
// a broken export or import), system blocks with identical content (kind,
// text, tool, arguments, call_id, encrypted payload), such as a system
// prompt appended twice, or a run of blocks repeated as when a flattened
// history is sent twice (the rule duplicate_blocks of `replay --check`,
// check.Runs). Other repeated content (the same question asked again, "OK"
// answered twice, the same reasoning text) is a conversation going on and
// is not reported. A group whose blocks also share one ID is reported
// once, by "id".
type Duplicate struct {
	Side Side `json:"side"`
	// By is "id", "content" or "run". For a run, Indexes and IDs list the
	// first copy's blocks, then the second's (reasoning blocks, which a
	// flattened copy often drops, are left out of both), and Kind and Block
	// are those of the first copy's first block.
	By   string      `json:"by"`
	Kind events.Kind `json:"kind"`
	// Indexes are the blocks' positions on Side, ascending; IDs their IDs.
	Indexes []int    `json:"indexes"`
	IDs     []string `json:"ids"`
	// Block is the first block of the group.
	Block events.Block `json:"block"`
}

// Violation is one block on one side that breaks an adjacency Rule.
type Violation struct {
	Side  Side        `json:"side"`
	Rule  Rule        `json:"rule"`
	Index int         `json:"index"`
	ID    string      `json:"id"`
	Kind  events.Kind `json:"kind"`
	// Message explains the violation in one line, naming the neighbouring
	// block when there is one.
	Message string `json:"message"`
}

// Diff compares two Turns block by block. A nil Turn is an empty one.
//
// Blocks are matched by ID first (the k-th occurrence of an ID in A with
// the k-th in B). Blocks left unmatched are then paired by content, in
// order of appearance: first with a block equal in every field but the ID,
// then with one of the same kind, text, tool, arguments and encrypted
// payload (trust, meta or call_id may differ and are reported as changed),
// so Turns with fresh or missing IDs still line up.
//
// Among matched blocks, one longest increasing subsequence of their B
// indexes (taken in A order) stays put and every other matched block is
// reported moved: no smaller set of moves explains the new order (for
// identical blocks without usable IDs, for the in-order pairing above).
// Text diffs are computed only for blocks whose text or arguments changed;
// the rest is O(n log n) in the number of blocks. Diff neither changes nor
// retains a or b, apart from sharing strings.
func Diff(a, b *projector.Turn) Result {
	var ab, bb []events.Block
	var ad, bd map[string]string
	if a != nil {
		ab, ad = a.Blocks, a.Data
	}
	if b != nil {
		bb, bd = b.Blocks, b.Data
	}

	m := match(ab, bb)
	stable := stableBlocks(m.bOfA)

	r := Result{
		Changes:          blockChanges(ab, bb, m, stable),
		SystemPrompt:     systemPromptChange(ab, bb, m),
		Data:             mapChanges(ad, bd),
		Duplicates:       append(duplicates(SideA, ab), duplicates(SideB, bb)...),
		Violations:       append(violations(SideA, ab), violations(SideB, bb)...),
		MatchedByContent: m.byContent,
	}
	if r.Data == nil {
		r.Data = []KeyChange{}
	}
	return r
}
