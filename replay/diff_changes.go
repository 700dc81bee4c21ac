package replay

import (
	"maps"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/turnlog/turnlog/events"
)

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
