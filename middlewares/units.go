package middlewares

import (
	"fmt"
	"slices"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// Unit is a run of a Turn's blocks, [Start, End), that must never be
// separated: a reasoning block and the block right after it (providers
// reject a reasoning item whose output does not follow it), and a tool
// call and its result, with everything between them (a model that asks
// for two calls gets both results after both calls). Ordering moves whole
// units and compaction cuts only between units, so neither can orphan a
// reasoning block or a tool result; a middleware of your own that moves or
// inserts blocks does the same with MoveUnit and InsertBlock.
type Unit struct{ Start, End int }

// unitEnd returns the end (exclusive) of the unit that starts at start.
//
// It allocates nothing: the chain calls it over the whole Turn before
// every model call.
func unitEnd(blocks []events.Block, start int) int {
	end := start + 1
	for k := start; k < end; k++ {
		switch b := &blocks[k]; b.Kind {
		case events.KindReasoning:
			if k+1 < len(blocks) {
				end = max(end, k+2)
			}
		case events.KindToolCall:
			for r := k + 1; r < len(blocks); r++ {
				if blocks[r].Kind == events.KindToolResult && blocks[r].CallID == b.CallID {
					end = max(end, r+1)
					break
				}
			}
		}
	}
	return end
}

// Units cuts blocks into their units, in order: every block is in exactly
// one, and the units' boundaries are the places where a block may be
// inserted or a unit moved to without separating what belongs together.
func Units(blocks []events.Block) []Unit {
	var out []Unit
	for start := 0; start < len(blocks); {
		end := unitEnd(blocks, start)
		out = append(out, Unit{start, end})
		start = end
	}
	return out
}

// units is Units, for the middlewares of this package.
func units(blocks []events.Block) []Unit { return Units(blocks) }

// unitOf returns the unit holding the block with ID id.
func unitOf(blocks []events.Block, id string) (Unit, bool) {
	for _, u := range Units(blocks) {
		for i := u.Start; i < u.End; i++ {
			if blocks[i].ID == id {
				return u, true
			}
		}
	}
	return Unit{}, false
}

// MoveUnit moves the unit that holds block id (a reasoning block moves
// with its follower, a tool call with its result) to just before the unit
// that holds block before, or to the end of the Turn when before is "".
// It records one blocks.reordered by actor with reason, and nothing when
// the unit is there already. Moving a unit before a block of its own is
// an error, as is a block the Turn does not hold.
func MoveUnit(tx *engine.Tx, actor, id, before, reason string) error {
	blocks := tx.Turn().Blocks
	u, ok := unitOf(blocks, id)
	if !ok {
		return fmt.Errorf("move unit: block %q is not in the turn", id)
	}
	at := len(blocks)
	if before != "" {
		v, ok := unitOf(blocks, before)
		if !ok {
			return fmt.Errorf("move unit: block %q is not in the turn", before)
		}
		if v == u {
			return fmt.Errorf("move unit: blocks %q and %q are in the same unit (a reasoning block and its follower, or a tool call and its result); they move together", id, before)
		}
		at = v.Start
	}
	if at == u.End {
		return nil // there already
	}
	order := make([]string, 0, len(blocks))
	for i := 0; i <= len(blocks); i++ {
		if i == at {
			for k := u.Start; k < u.End; k++ {
				order = append(order, blocks[k].ID)
			}
		}
		if i < len(blocks) && (i < u.Start || i >= u.End) {
			order = append(order, blocks[i].ID)
		}
	}
	return tx.Emit(actor, events.BlocksReordered{Order: order, Reason: reason})
}

// InsertBlock inserts b at index (0 is the front, the number of blocks
// the end) with one block.inserted by actor with reason; an empty b.ID
// gets a fresh one. An index inside a unit (between a reasoning block and
// its follower, or a tool call and its result) is refused, naming the
// nearest places that are not: the model would otherwise get a Turn its
// provider rejects.
func InsertBlock(tx *engine.Tx, actor string, index int, b events.Block, reason string) error {
	blocks := tx.Turn().Blocks
	if index < 0 || index > len(blocks) {
		return fmt.Errorf("insert block: index %d is outside the turn (0 to %d)", index, len(blocks))
	}
	for _, u := range Units(blocks) {
		if u.Start < index && index < u.End {
			return fmt.Errorf("insert block: index %d is inside the unit of blocks %d to %d (%s), which must stay together; insert at %d or %d",
				index, u.Start, u.End-1, kinds(blocks[u.Start:u.End]), u.Start, u.End)
		}
	}
	if b.ID == "" {
		b.ID = engine.NewID()
	}
	return tx.Emit(actor, events.BlockInserted{Index: index, Block: b, Reason: reason})
}

func kinds(bs []events.Block) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b.Kind)
	}
	return fmt.Sprint(slices.Compact(out))
}
