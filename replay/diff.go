package replay

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
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
	// Duplicates lists, per side, block IDs that occur more than once and
	// blocks with identical content (e.g. two identical system prompts).
	// They are reported but do not by themselves make the Turns differ.
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
// a broken export or import), or identical content (kind, text, tool,
// arguments, call_id, encrypted payload), such as a system prompt appended
// twice. A group whose blocks also share one ID is reported once, by "id".
// Blocks with no text and no tool or reasoning payload are not compared by
// content.
type Duplicate struct {
	Side Side `json:"side"`
	// By is "id" or "content".
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

// matching pairs A and B blocks: bOfA[i] is the B index of A's block i and
// aOfB[j] the A index of B's block j, -1 when unmatched.
type matching struct {
	bOfA, aOfB []int
	byContent  int
}

// contentKey is what a model reads of a block, apart from call IDs (which
// exporters may renumber); trust, meta and the rest are compared once
// matched.
type contentKey struct {
	kind                  events.Kind
	text, tool, args, enc string
}

func keyOf(b *events.Block) contentKey {
	return contentKey{b.Kind, b.Text, b.ToolName, b.Arguments, b.Encrypted}
}

func match(a, b []events.Block) matching {
	m := matching{bOfA: filled(len(a), -1), aOfB: filled(len(b), -1)}
	next := make([]int, len(a))
	matchBy(a, b, m, next, func(b *events.Block) (string, bool) { return b.ID, b.ID != "" })
	// The blocks left over: by everything but the ID, then by what the
	// model reads, so that among repeated texts a block pairs with its
	// exact twin before a merely similar one.
	m.byContent += matchBy(a, b, m, next, func(b *events.Block) (exactKey, bool) { return exactKeyOf(b), true })
	m.byContent += matchBy(a, b, m, next, func(b *events.Block) (contentKey, bool) { return keyOf(b), true })
	return m
}

// matchBy pairs still unmatched blocks whose keys are equal (and usable:
// ok), the k-th occurrence in A with the k-th in B, and returns how many it
// paired. head holds the first unpaired A index of each key and next
// (scratch space of len(a)) chains the later ones, so repeated keys pair
// in order with one map and no slice per key.
func matchBy[K comparable](a, b []events.Block, m matching, next []int, key func(*events.Block) (K, bool)) int {
	head := make(map[K]int)
	for i := len(a) - 1; i >= 0; i-- {
		if m.bOfA[i] >= 0 {
			continue
		}
		k, ok := key(&a[i])
		if !ok {
			continue
		}
		if h, ok := head[k]; ok {
			next[i] = h
		} else {
			next[i] = -1
		}
		head[k] = i
	}
	if len(head) == 0 {
		return 0
	}
	n := 0
	for j := range b {
		if m.aOfB[j] >= 0 {
			continue
		}
		k, ok := key(&b[j])
		if !ok {
			continue
		}
		i, ok := head[k]
		if !ok || i < 0 {
			continue
		}
		head[k] = next[i]
		m.bOfA[i], m.aOfB[j] = j, i
		n++
	}
	return n
}

// exactKey is every field but the ID; Meta is flattened in key order.
type exactKey struct {
	contentKey
	trust        events.Trust
	callID, meta string
	isError      bool
}

func exactKeyOf(b *events.Block) exactKey {
	k := exactKey{contentKey: keyOf(b), trust: b.Trust, callID: b.CallID, isError: b.IsError}
	if len(b.Meta) > 0 {
		var sb strings.Builder
		for _, mk := range slices.Sorted(maps.Keys(b.Meta)) {
			sb.WriteString(strconv.Quote(mk))
			sb.WriteByte('=')
			sb.WriteString(strconv.Quote(b.Meta[mk]))
			sb.WriteByte(' ')
		}
		k.meta = sb.String()
	}
	return k
}

func filled(n, v int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// stableBlocks marks the A blocks that keep their relative order: one
// longest strictly increasing subsequence of bOfA over matched blocks
// (patience sorting, O(n log n)). Matched blocks left unmarked moved; no
// smaller set of moves explains the reordering.
func stableBlocks(bOfA []int) []bool {
	stable := make([]bool, len(bOfA))
	tails := make([]int, 0, 64) // tails[p]: A index ending the best run of length p+1
	prev := make([]int, len(bOfA))
	for i, j := range bOfA {
		if j < 0 {
			continue
		}
		p, _ := slices.BinarySearchFunc(tails, j, func(t, target int) int {
			return bOfA[t] - target
		})
		if p > 0 {
			prev[i] = tails[p-1]
		} else {
			prev[i] = -1
		}
		if p == len(tails) {
			tails = append(tails, i)
		} else {
			tails[p] = i
		}
	}
	if len(tails) > 0 {
		for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
			stable[i] = true
		}
	}
	return stable
}

// blockChanges lists changes in B's order. A removed block is placed right
// after the B position of the nearest stable block before it in A; since
// stable blocks' B indexes increase along A, those anchors are
// non-decreasing and one merge pass suffices.
func blockChanges(a, b []events.Block, m matching, stable []bool) []Change {
	type removal struct{ i, anchor int }
	var removed []removal
	anchor := -1
	for i, j := range m.bOfA {
		switch {
		case j < 0:
			removed = append(removed, removal{i, anchor})
		case stable[i]:
			anchor = j
		}
	}

	out := []Change{}
	r := 0
	emitRemoved := func(upTo int) {
		for ; r < len(removed) && removed[r].anchor < upTo; r++ {
			i := removed[r].i
			out = append(out, Change{Op: OpRemoved, ID: a[i].ID, Kind: a[i].Kind,
				FromIndex: i, ToIndex: -1, Block: a[i].Clone()})
		}
	}
	for j := range b {
		emitRemoved(j)
		i := m.aOfB[j]
		if i < 0 {
			out = append(out, Change{Op: OpAdded, ID: b[j].ID, Kind: b[j].Kind,
				FromIndex: -1, ToIndex: j, Block: b[j].Clone()})
			continue
		}
		fields := blockFields(&a[i], &b[j])
		moved := !stable[i]
		if !moved && len(fields) == 0 {
			continue
		}
		c := Change{Op: OpChanged, ID: b[j].ID, Kind: b[j].Kind,
			FromIndex: i, ToIndex: j, Fields: fields, Block: b[j].Clone()}
		if moved {
			c.Op = OpMoved
		}
		if a[i].ID != b[j].ID {
			c.FromID = a[i].ID
		}
		if len(fields) > 0 {
			before := a[i].Clone()
			c.Before = &before
			c.TextDiff = textDiff(&a[i], &b[j])
			c.Meta = mapChanges(a[i].Meta, b[j].Meta)
		}
		out = append(out, c)
	}
	emitRemoved(len(b) + 1)
	return out
}

// blockFields names, by JSON name, the fields of x and y that differ.
// IDs are not compared: matching decided that x and y are the same block.
func blockFields(x, y *events.Block) []string {
	var f []string
	if x.Kind != y.Kind {
		f = append(f, "kind")
	}
	if x.Text != y.Text {
		f = append(f, "text")
	}
	if x.Trust != y.Trust {
		f = append(f, "trust")
	}
	if !sameMap(x.Meta, y.Meta) {
		f = append(f, "meta")
	}
	if x.CallID != y.CallID {
		f = append(f, "call_id")
	}
	if x.ToolName != y.ToolName {
		f = append(f, "tool")
	}
	if x.Arguments != y.Arguments {
		f = append(f, "arguments")
	}
	if x.IsError != y.IsError {
		f = append(f, "is_error")
	}
	if x.Encrypted != y.Encrypted {
		f = append(f, "encrypted")
	}
	return f
}

// sameMap treats nil and empty alike: codecs drop empty maps.
func sameMap(x, y map[string]string) bool {
	return len(x) == len(y) && maps.Equal(x, y)
}

// textDiff is the unified diff of the texts, then of the tool arguments.
func textDiff(x, y *events.Block) string {
	var sb strings.Builder
	if x.Text != y.Text {
		sb.WriteString(unified("A/"+x.ID, "B/"+y.ID, x.Text, y.Text))
	}
	if x.Arguments != y.Arguments {
		sb.WriteString(unified("A/"+x.ID+"#arguments", "B/"+y.ID+"#arguments", x.Arguments, y.Arguments))
	}
	return sb.String()
}

// unified diffs two texts line by line. Chat texts rarely end in a newline;
// when neither does, one is added to both so the diff is not cluttered with
// "\ No newline at end of file" markers (when only one does, the marker is
// the difference and stays).
func unified(from, to, x, y string) string {
	if !strings.HasSuffix(x, "\n") && !strings.HasSuffix(y, "\n") {
		x, y = x+"\n", y+"\n"
	}
	d, err := udiff.ToUnified(from, to, x, udiff.Lines(x, y), udiff.DefaultContextLines)
	if err != nil {
		// Cannot happen (the edits come from the same texts); a diff that
		// only says the texts differ is still true.
		return "--- " + from + "\n+++ " + to + "\n(texts differ)\n"
	}
	return d
}

// mapChanges lists the keys of x (A) and y (B) that differ, sorted by key.
func mapChanges(x, y map[string]string) []KeyChange {
	var out []KeyChange
	for k, xv := range x {
		yv, ok := y[k]
		switch {
		case !ok:
			out = append(out, KeyChange{Key: k, Op: OpRemoved, From: xv})
		case xv != yv:
			out = append(out, KeyChange{Key: k, Op: OpChanged, From: xv, To: yv})
		}
	}
	for k, yv := range y {
		if _, ok := x[k]; !ok {
			out = append(out, KeyChange{Key: k, Op: OpAdded, To: yv})
		}
	}
	slices.SortFunc(out, func(p, q KeyChange) int { return strings.Compare(p.Key, q.Key) })
	return out
}

func firstSystem(bs []events.Block) int {
	for i := range bs {
		if bs[i].Kind == events.KindSystem {
			return i
		}
	}
	return -1
}

func systemPromptChange(a, b []events.Block, m matching) *SystemPromptChange {
	ia, ib := firstSystem(a), firstSystem(b)
	if ia < 0 && ib < 0 {
		return nil
	}
	c := &SystemPromptChange{FromIndex: ia, ToIndex: ib}
	if ia >= 0 {
		c.FromID = a[ia].ID
	}
	if ib >= 0 {
		c.ToID = b[ib].ID
	}
	switch {
	case ia < 0:
		c.Fields = []string{"added"}
		return c
	case ib < 0:
		c.Fields = []string{"removed"}
		return c
	}
	if m.bOfA[ia] != ib {
		c.Fields = append(c.Fields, "id")
	}
	if ia != ib {
		c.Fields = append(c.Fields, "index")
	}
	c.Fields = append(c.Fields, blockFields(&a[ia], &b[ib])...)
	if len(c.Fields) == 0 {
		return nil
	}
	if a[ia].Text != b[ib].Text {
		c.TextDiff = unified("A/"+a[ia].ID, "B/"+b[ib].ID, a[ia].Text, b[ib].Text)
	}
	return c
}

// dupKey is contentKey plus the call ID: two tool calls with the same tool
// and arguments but different call IDs are two legitimate calls.
type dupKey struct {
	contentKey
	callID string
}

// duplicates groups repeated IDs and repeated content on one side, in
// order of each group's first block.
func duplicates(side Side, bs []events.Block) []Duplicate {
	out := []Duplicate{}
	byID := make(map[string]int, len(bs))  // ID -> first index, or -(group+2)
	byKey := make(map[dupKey]int, len(bs)) // same encoding
	first := func(g int) int { return -(g + 2) }
	add := func(by string, prev, i int) int {
		if prev >= 0 { // second occurrence: open a group
			out = append(out, Duplicate{Side: side, By: by, Kind: bs[prev].Kind,
				Indexes: []int{prev}, IDs: []string{bs[prev].ID}, Block: bs[prev].Clone()})
			prev = first(len(out) - 1)
		}
		g := -prev - 2
		out[g].Indexes = append(out[g].Indexes, i)
		out[g].IDs = append(out[g].IDs, bs[i].ID)
		return prev
	}
	for i := range bs {
		b := &bs[i]
		if b.ID != "" {
			if prev, ok := byID[b.ID]; ok {
				byID[b.ID] = add("id", prev, i)
			} else {
				byID[b.ID] = i
			}
		}
		if b.Text == "" && b.ToolName == "" && b.Arguments == "" && b.Encrypted == "" {
			continue
		}
		k := dupKey{keyOf(b), b.CallID}
		if prev, ok := byKey[k]; ok {
			byKey[k] = add("content", prev, i)
		} else {
			byKey[k] = i
		}
	}
	// A content group whose blocks all share one ID is the same finding as
	// that ID's group: keep the "id" one.
	kept := out[:0]
	for _, d := range out {
		if d.By == "content" && d.IDs[0] != "" && allEqual(d.IDs) {
			continue
		}
		kept = append(kept, d)
	}
	slices.SortStableFunc(kept, func(p, q Duplicate) int { return p.Indexes[0] - q.Indexes[0] })
	return kept
}

func allEqual(s []string) bool {
	for _, v := range s[1:] {
		if v != s[0] {
			return false
		}
	}
	return true
}

// violations checks the adjacency rules on one side in one pass, sorted by
// index.
func violations(side Side, bs []events.Block) []Violation {
	out := []Violation{}
	at := func(i int) string { return string(side) + "[" + strconv.Itoa(i) + "]" }
	report := func(i int, rule Rule, msg string) {
		out = append(out, Violation{Side: side, Rule: rule, Index: i, ID: bs[i].ID, Kind: bs[i].Kind, Message: msg})
	}
	called := make(map[string]bool)
	var pending []int // tool_call indexes not answered yet, in order
	answered := make(map[string]bool)
	sorted := true
	for i := range bs {
		b := &bs[i]
		switch b.Kind {
		case events.KindReasoning:
			switch {
			case i+1 == len(bs):
				report(i, RuleReasoningFollower, "is the last block; a reasoning block must be immediately followed by llm_text or tool_call")
			case bs[i+1].Kind != events.KindLLMText && bs[i+1].Kind != events.KindToolCall:
				report(i, RuleReasoningFollower, "is followed by "+string(bs[i+1].Kind)+" at "+at(i+1)+"; a reasoning block must be immediately followed by llm_text or tool_call")
			}
		case events.KindToolCall:
			called[b.CallID] = true
			pending = append(pending, i)
		case events.KindToolResult:
			if !called[b.CallID] {
				report(i, RuleResultWithoutCall, "answers call_id "+strconv.Quote(b.CallID)+", which no earlier tool_call made")
				continue
			}
			answered[b.CallID] = true
		case events.KindUser:
			for _, c := range pending {
				if !answered[bs[c].CallID] {
					report(c, RuleCallWithoutResult, "call_id "+strconv.Quote(bs[c].CallID)+" has no tool_result before the user block at "+at(i))
					sorted = false
				}
			}
			pending = pending[:0]
		}
	}
	if !sorted {
		slices.SortStableFunc(out, func(p, q Violation) int { return p.Index - q.Index })
	}
	return out
}
