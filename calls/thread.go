package calls

import (
	"crypto/sha256"
	"sync"

	"github.com/turnlog/turnlog/events"
)

// Index finds the conversation of a call that names none, by content: a
// call whose input begins with the blocks of a recorded call's input and
// output continues that conversation when that call is the latest
// recorded in it, and forks it there otherwise. Only calls that finished
// are indexed, and a state is the input with the output, never the input
// alone: two conversations whose first calls are equal are never merged.
// Responses' IDs map to their conversations for previous_response_id.
//
// An Index lives in one gateway's memory and holds at most its limit of
// states (the oldest are forgotten first): after a restart, or behind a
// load balancer that sends a conversation's calls to several gateways,
// inferred threading starts new conversations where it cannot find the
// earlier call; clients that name their conversation
// (Turnlog-Conversation) are threaded whatever the gateway. It is safe for
// concurrent use.
type Index struct {
	mu        sync.Mutex
	limit     int
	states    map[[32]byte]Ref
	order     [][32]byte
	latest    map[string]int
	responses map[string]string
	respOrder []string
}

// Ref is a recorded state: conversation Conversation after its Events-th
// event.
type Ref struct {
	Conversation string
	Events       int
}

// NewIndex returns an Index that keeps up to limit states.
func NewIndex(limit int) *Index {
	return &Index{limit: max(limit, 1), states: map[[32]byte]Ref{}, latest: map[string]int{}, responses: map[string]string{}}
}

// chain returns the state keys of each prefix of blocks: key i covers
// blocks[:i+1].
func chain(blocks []events.Block) [][32]byte {
	out := make([][32]byte, len(blocks))
	var prev [32]byte
	for i := range blocks {
		k := Key(&blocks[i])
		h := sha256.New()
		h.Write(prev[:])
		h.Write(k[:])
		h.Sum(out[i][:0])
		prev = out[i]
	}
	return out
}

// Record notes that conversation conv, after its Events-th event, holds
// blocks, the state a finished call left, and that it is the
// conversation's latest call.
func (x *Index) Record(conv string, n int, blocks []events.Block) {
	if len(blocks) == 0 {
		return
	}
	keys := chain(blocks)
	k := keys[len(keys)-1]
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.states[k]; !ok {
		x.order = append(x.order, k)
	}
	x.states[k] = Ref{Conversation: conv, Events: n}
	x.latest[conv] = n
	for len(x.order) > x.limit {
		old := x.order[0]
		x.order = x.order[1:]
		if r, ok := x.states[old]; ok && x.latest[r.Conversation] == r.Events {
			delete(x.latest, r.Conversation)
		}
		delete(x.states, old)
	}
}

// Find returns the recorded state that the longest prefix of blocks is,
// and whether it is its conversation's latest call (continue) or not
// (fork there). ok is false when no prefix was recorded.
func (x *Index) Find(blocks []events.Block) (ref Ref, latest, ok bool) {
	keys := chain(blocks)
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := len(keys) - 1; i >= 0; i-- {
		if r, found := x.states[keys[i]]; found {
			return r, x.latest[r.Conversation] == r.Events, true
		}
	}
	return Ref{}, false, false
}

// RecordResponse notes that response id was produced in conversation conv.
func (x *Index) RecordResponse(id, conv string) {
	if id == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.responses[id]; !ok {
		x.respOrder = append(x.respOrder, id)
	}
	x.responses[id] = conv
	for len(x.respOrder) > x.limit {
		delete(x.responses, x.respOrder[0])
		x.respOrder = x.respOrder[1:]
	}
}

// Response returns the conversation response id was produced in.
func (x *Index) Response(id string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	c, ok := x.responses[id]
	return c, ok
}

// RequestBlocks returns the request's input blocks in order, what Find
// takes.
func (r *Request) RequestBlocks() []events.Block {
	var bs []events.Block
	for _, it := range r.Items {
		bs = append(bs, it.Blocks...)
	}
	return bs
}
