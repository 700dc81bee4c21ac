package replay

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/events"
)

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
