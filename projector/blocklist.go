package projector

import (
	"fmt"
	"slices"
)

// The Turn's block list: the primitives every event's fold changes it
// with, keeping the ID index and the cached digests current.

// push appends a block, keeping the ID index current: appends are the
// common case and must stay O(1).
func (t *Turn) push(b Block) error {
	idx := t.index()
	// One map operation, not a lookup and an insert: a taken ID shows as
	// a map that did not grow; the index is then rebuilt on next use.
	n := len(idx)
	if idx[b.ID] = len(t.Blocks); len(idx) == n {
		t.pos = nil
		return fmt.Errorf("%w: %s", ErrDuplicateBlock, b.ID)
	}
	t.Blocks = append(t.Blocks, b)
	// Normally past the cached digests already; not after blocks were
	// dropped outside Apply, and a new block may reuse a dropped one's ID.
	t.forget(len(t.Blocks) - 1)
	return nil
}

func (t *Turn) insert(i int, b Block) error {
	if i == len(t.Blocks) {
		return t.push(b)
	}
	if _, dup := t.index()[b.ID]; dup {
		return fmt.Errorf("%w: %s", ErrDuplicateBlock, b.ID)
	}
	t.Blocks = append(t.Blocks, Block{})
	copy(t.Blocks[i+1:], t.Blocks[i:])
	t.Blocks[i] = b
	t.pos = nil
	if i < len(t.sums) {
		t.sums = slices.Insert(t.sums, i, blockSum{})
	}
	return nil
}

func (t *Turn) need(id string) (int, error) {
	i, ok := t.index()[id]
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrMissingBlock, id)
	}
	return i, nil
}

// set checks that ids name distinct existing blocks and returns them as a set.
func (t *Turn) set(field string, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		if _, err := t.need(id); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if out[id] {
			return nil, fmt.Errorf("%w: %s: %s listed twice", ErrMismatch, field, id)
		}
		out[id] = true
	}
	return out, nil
}

// remove drops the blocks in drop and, when at >= 0, puts insert where the
// block at index at stood. Kept blocks keep their cached digests; inserted
// ones have none, even when they take a dropped block's ID (a split that
// keeps its ID, a summary in place of what it summarises).
func (t *Turn) remove(drop map[string]bool, at int, insert []Block) {
	// A new array, never the old one changed in place (a caller may hold
	// the blocks it had), but as large as the old: a Turn compacted is
	// about to grow back, and regrowing from the kept few cost more than
	// the rest of the fold.
	kept := make([]Block, 0, max(len(t.Blocks)-len(drop)+len(insert), cap(t.Blocks)))
	var sums []blockSum
	if len(t.sums) > 0 {
		sums = make([]blockSum, 0, cap(kept))
	}
	for i, b := range t.Blocks {
		if i == at {
			kept = append(kept, insert...)
			if sums != nil {
				sums = append(sums, make([]blockSum, len(insert))...)
			}
		}
		if !drop[b.ID] {
			kept = append(kept, b)
			if sums != nil {
				sums = append(sums, t.sumAt(i))
			}
		}
	}
	t.Blocks = kept
	t.pos = nil
	t.sums = sums
}

// sumAt is the cached digest entry of the block at index i, if any.
func (t *Turn) sumAt(i int) blockSum {
	if i < len(t.sums) {
		return t.sums[i]
	}
	return blockSum{}
}
