package replay

import (
	"slices"
	"strconv"

	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

// dupKey is contentKey plus the call ID: two tool calls with the same tool
// and arguments but different call IDs are two legitimate calls.
type dupKey struct {
	contentKey
	callID string
}

// duplicates groups, on one side, repeated IDs (always a fault: the
// projector refuses them), system blocks with the same text (a prompt
// appended twice) and runs of blocks repeated as check.Runs finds them (a
// history sent twice), in order of each group's first block. Other blocks
// with the same content are a conversation going on (the same question
// asked again, a short answer such as "OK" given twice, the same
// reasoning text) and are not reported.
func duplicates(side Side, bs []events.Block) []Duplicate {
	out := []Duplicate{}
	byID := make(map[string]int, len(bs)) // ID -> first index, or -(group+2)
	byKey := make(map[dupKey]int)         // same encoding, system blocks only
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
		if b.Kind != events.KindSystem {
			continue
		}
		k := dupKey{keyOf(b), b.CallID}
		if prev, ok := byKey[k]; ok {
			byKey[k] = add("content", prev, i)
		} else {
			byKey[k] = i
		}
	}
	for _, r := range check.Runs(bs) {
		idx := append(slices.Clone(r.First), r.Again...)
		d := Duplicate{Side: side, By: "run", Kind: bs[idx[0]].Kind, Indexes: idx, IDs: make([]string, len(idx)), Block: bs[idx[0]].Clone()}
		for k, i := range idx {
			d.IDs[k] = bs[i].ID
		}
		out = append(out, d)
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
			// Reasoning produced in a row (Anthropic's thinking, then
			// redacted thinking) goes back as a row, as replay --check
			// allows: what follows the row is the follower. A row is
			// judged once, at its first block.
			if i > 0 && bs[i-1].Kind == events.KindReasoning {
				continue
			}
			j := i + 1
			for j < len(bs) && bs[j].Kind == events.KindReasoning {
				j++
			}
			row := ""
			if j > i+1 {
				row = "is followed by reasoning at " + at(i+1) + ", then "
			}
			switch {
			case j == len(bs) && row == "":
				report(i, RuleReasoningFollower, "is the last block; a reasoning block must be immediately followed by llm_text or tool_call")
			case j == len(bs):
				report(i, RuleReasoningFollower, row+"by nothing: the row of reasoning blocks ends the Turn; it must be immediately followed by llm_text or tool_call")
			case bs[j].Kind != events.KindLLMText && bs[j].Kind != events.KindToolCall && row == "":
				report(i, RuleReasoningFollower, "is followed by "+string(bs[j].Kind)+" at "+at(j)+"; a reasoning block must be immediately followed by llm_text or tool_call")
			case bs[j].Kind != events.KindLLMText && bs[j].Kind != events.KindToolCall:
				report(i, RuleReasoningFollower, row+"by "+string(bs[j].Kind)+" at "+at(j)+"; a reasoning block, or a row of them, must be immediately followed by llm_text or tool_call")
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
