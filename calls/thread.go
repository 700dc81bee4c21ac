package calls

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// ThreadStore keeps the threading index's entries: short keys made of
// letters, digits, '.', '_' and '-', and short values. Gateways that must
// thread alike (several behind a load balancer, or import --calls beside
// them) share one store (eventlog's threads bucket); MemStore keeps one
// process's. Get's ok is false for a key never put (or forgotten).
type ThreadStore interface {
	Get(ctx context.Context, key string) (value string, ok bool, err error)
	// Put stores every pair; it returns once they are durable.
	Put(ctx context.Context, pairs map[string]string) error
}

// Threads finds the conversation of a call that names none, by content: a
// call whose input begins with the blocks of a recorded call's input and
// output continues that conversation when that call is the latest
// recorded in it, and forks it there otherwise. Only calls that finished
// with an output are recorded, and a state is the input with the output,
// never the input alone: two conversations whose first calls are equal are
// never merged. Responses' IDs map to their conversations for
// previous_response_id.
//
// The entries live in a ThreadStore under these keys:
//
//	s.<hex SHA-256 chain of the state's blocks>  "<conversation>@<events>"
//	c.<conversation>                              "<events>" of its latest recorded call
//	r.<hex SHA-256 of a response ID>              "<conversation>@<events>"
//	o.<hex SHA-256 of an output item's ID>        "<conversation>@<events>" after the call that produced it
//	i.<hash of an imported call's line>           "<conversation>" it was recorded in ("pending <conversation>" while it is)
//	e.<hex SHA-256 of a conversation ID>          when it was last erased (RFC 3339)
//	a.<hex SHA-256 chain of a failed first call's input>  "<conversation>@<events>", for its retry (retried.go)
//
// A state's key is a chain of its blocks' content keys (Key), so the
// state of every prefix of a call's input is known without rehashing; a
// lookup tries only the prefixes that end with a model's output block
// (the only places a recorded state can end), longest first.
type Threads struct {
	store ThreadStore
}

// NewThreads returns a threading index kept in store.
func NewThreads(store ThreadStore) *Threads { return &Threads{store: store} }

// Ref is a recorded state: conversation Conversation after its Events-th
// event.
type Ref struct {
	Conversation string
	Events       int
}

// ModelOutput reports whether a block of kind k is what a model writes
// (text, a tool call, reasoning): what can end a recorded state, and what
// an input that re-sends earlier turns holds.
func ModelOutput(k events.Kind) bool {
	return k == events.KindLLMText || k == events.KindToolCall || k == events.KindReasoning
}

func stateKey(k [32]byte) string      { return "s." + hex.EncodeToString(k[:]) }
func reasonlessKey(k [32]byte) string { return "n." + hex.EncodeToString(k[:]) }
func importedKey(key string) string   { return "i." + key }
func latestKey(conv string) string    { return "c." + conv }
func (r Ref) value() string           { return r.Conversation + "@" + strconv.Itoa(r.Events) }

// parseRef reads a state's value.
func parseRef(v string) (Ref, bool) {
	i := strings.LastIndexByte(v, '@')
	if i <= 0 {
		return Ref{}, false
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || events.ValidateConversationID(v[:i]) != nil {
		return Ref{}, false
	}
	return Ref{Conversation: v[:i], Events: n}, true
}

// AsyncThreadStore is a ThreadStore that can also publish pairs without
// waiting for them to be durable (eventlog's threads bucket): RecordAsync
// then lets its caller overlap that wait with work of its own.
type AsyncThreadStore interface {
	ThreadStore
	// PutAsync publishes every pair and returns what waits until they are
	// durable.
	PutAsync(pairs map[string]string) (wait func(context.Context) error, err error)
}

// Record notes that conversation conv, after its n-th event, holds
// blocks, the state a finished call left, that it is the conversation's
// latest call, and that the call's answer (its response and items) was
// produced in conv. A state that does not end with a model's output
// block is not recorded (nothing could continue it by content). The
// state is the call's scope's (Request.Scope: only calls of the same end
// user find it).
//
// chain, when not nil, is ScopedChain(scope, blocks), known already.
func (x *Threads) Record(ctx context.Context, conv string, n int, scope string, blocks []events.Block, chain [][32]byte, answer Answer) error {
	pairs := recordPairs(conv, n, scope, blocks, chain, answer)
	if len(pairs) == 0 {
		return nil
	}
	if err := x.store.Put(ctx, pairs); err != nil {
		return fmt.Errorf("record the call for threading: %w", err)
	}
	return nil
}

// RecordAsync is Record that returns once the entries are on their way,
// with what waits until they are durable; on a store that cannot publish
// without waiting, it is Record, and the wait returns at once.
func (x *Threads) RecordAsync(ctx context.Context, conv string, n int, scope string, blocks []events.Block, chain [][32]byte, answer Answer) (wait func(context.Context) error, err error) {
	done := func(context.Context) error { return nil }
	pairs := recordPairs(conv, n, scope, blocks, chain, answer)
	if len(pairs) == 0 {
		return done, nil
	}
	as, ok := x.store.(AsyncThreadStore)
	if !ok {
		if err := x.store.Put(ctx, pairs); err != nil {
			return nil, fmt.Errorf("record the call for threading: %w", err)
		}
		return done, nil
	}
	w, err := as.PutAsync(pairs)
	if err != nil {
		return nil, fmt.Errorf("record the call for threading: %w", err)
	}
	return func(ctx context.Context) error {
		if err := w(ctx); err != nil {
			return fmt.Errorf("record the call for threading: %w", err)
		}
		return nil
	}, nil
}

// SwapThreadStore is a ThreadStore that can change a key's value only
// while it still holds an expected one (eventlog's bucket by revision):
// Unrecord then moves a conversation's latest call back without undoing a
// later call's.
type SwapThreadStore interface {
	ThreadStore
	// Swap sets key to new if it holds old, and reports whether it did.
	Swap(ctx context.Context, key, old, new string) (bool, error)
}

// Unrecord undoes what Record (RecordAsync) said of conv's latest call,
// for a call whose outcome was then not stored: the call that left conv
// at back is its latest again, unless a later call has been recorded
// since. Without it, a retry of the call (its app saw the response cut)
// would find the state it continues no longer latest and fork the
// conversation, leaving the unstored call behind. The entries of the
// state at n stay: a state the log lacks is found missing when loaded.
// A store that cannot swap is left as it is.
func (x *Threads) Unrecord(ctx context.Context, conv string, n, back int) error {
	ss, ok := x.store.(SwapThreadStore)
	if !ok {
		return nil
	}
	if _, err := ss.Swap(ctx, latestKey(conv), strconv.Itoa(n), strconv.Itoa(back)); err != nil {
		return fmt.Errorf("unrecord the call for threading: %w", err)
	}
	return nil
}

// reasonlessState returns the key of the state blocks hold with their
// reasoning left out, for a state that holds reasoning and ends with a
// model's text or tool call (see find).
func reasonlessState(scope string, blocks []events.Block) (string, bool) {
	less := withoutReasoning(blocks)
	if len(less) == len(blocks) || len(less) == 0 || !ModelOutput(less[len(less)-1].Kind) {
		return "", false
	}
	chain := ScopedChain(scope, less)
	return reasonlessKey(chain[len(chain)-1]), true
}

// recordPairs are the entries Record writes.
func recordPairs(conv string, n int, scope string, blocks []events.Block, chain [][32]byte, answer Answer) map[string]string {
	pairs := map[string]string{}
	if len(blocks) > 0 && ModelOutput(blocks[len(blocks)-1].Kind) {
		if len(chain) != len(blocks) {
			chain = ScopedChain(scope, blocks)
		}
		pairs[stateKey(chain[len(chain)-1])] = Ref{conv, n}.value()
		pairs[latestKey(conv)] = strconv.Itoa(n)
		if k, ok := reasonlessState(scope, blocks); ok {
			pairs[k] = Ref{conv, n}.value()
		}
		if k, ok := doublesState(scope, blocks, chain); ok {
			pairs[k] = Ref{conv, n}.value()
		}
	}
	if answer.ResponseID != "" {
		// Where the response left its conversation: a call that names it
		// in previous_response_id after the conversation went on
		// branches there (see Response).
		pairs[responseKey(answer.ResponseID)] = Ref{conv, n}.value()
	}
	for _, id := range answer.ItemIDs {
		// Where a reference to the item finds it (see Items).
		pairs[itemKey(id)] = Ref{conv, n}.value()
	}
	return pairs
}

// Find returns the recorded state that the longest prefix of blocks is,
// and whether it is its conversation's latest call (continue) or not
// (fork there), among the states of scope (Request.Scope). ok is false
// when no prefix was recorded. chain, when not nil, is ScopedChain(scope,
// blocks), known already (Request.RequestChain).
func (x *Threads) Find(ctx context.Context, scope string, blocks []events.Block, chain [][32]byte) (ref Ref, latest, ok bool, err error) {
	return x.find(ctx, scope, blocks, chain, false)
}

// FindLongest is Find tried only at the longest prefix that can be a
// recorded state (the one ending with the input's last output block): a
// match there is the match Find would return from any store holding it,
// since no longer prefix can be a state. The gateway asks its own copy of
// the index this way before the shared one.
func (x *Threads) FindLongest(ctx context.Context, scope string, blocks []events.Block, chain [][32]byte) (ref Ref, latest, ok bool, err error) {
	return x.find(ctx, scope, blocks, chain, true)
}

func (x *Threads) find(ctx context.Context, scope string, blocks []events.Block, chain [][32]byte, longestOnly bool) (ref Ref, latest, ok bool, err error) {
	ref, latest, ok, err = x.findAt(ctx, scope, blocks, chain, longestOnly, stateKey)
	if ok || err != nil || longestOnly {
		return ref, latest, ok, err
	}
	// A client may leave out the reasoning a model produced in earlier
	// turns (Anthropic strips it from what the model reads, and says so):
	// its call continues the state recorded without it. One round trip
	// more, for the longest such state: what such a client continues.
	ref, latest, ok, err = x.findAt(ctx, scope, withoutReasoning(blocks), nil, true, reasonlessKey)
	if ok || err != nil {
		return ref, latest, ok, err
	}
	// A middleware that puts its system prompt in front of a history
	// that holds it already (the commonest duplicated system prompt): its
	// call continues the state its input is with each system block sent
	// again counted once, so the duplicate is planned, and found, at the
	// call that sent it, in its conversation. A first call has no model
	// output to end a state with: it still starts its own. A middleware
	// that does so on every call sends its prompt once more each call,
	// so the state it continues holds the prompt already repeated: that
	// state is the input with one repeat left out, tried first, as
	// counting every repeat once finds only the chat's first state.
	if once := systemOnce(blocks); len(once) != len(blocks) {
		if less := systemOneLess(blocks); len(less) != len(once) {
			ref, latest, ok, err = x.findAt(ctx, scope, less, nil, false, stateKey)
			if ok || err != nil {
				return ref, latest, ok, err
			}
		}
		return x.findAt(ctx, scope, once, nil, false, stateKey)
	}
	return Ref{}, false, false, nil
}

// withoutReasoning returns blocks without their reasoning blocks (blocks
// itself when it has none).
func withoutReasoning(blocks []events.Block) []events.Block {
	n := 0
	for i := range blocks {
		if blocks[i].Kind == events.KindReasoning {
			n++
		}
	}
	if n == 0 {
		return blocks
	}
	out := make([]events.Block, 0, len(blocks)-n)
	for _, b := range blocks {
		if b.Kind != events.KindReasoning {
			out = append(out, b)
		}
	}
	return out
}

// findAt is find among the states named by key.
func (x *Threads) findAt(ctx context.Context, scope string, blocks []events.Block, chain [][32]byte, longestOnly bool, key func([32]byte) string) (ref Ref, latest, ok bool, err error) {
	// The candidates: the prefixes that end with an output block, longest
	// first, by the index of that block. Each is named (hex) only when
	// its group is asked: a continuation is found at the first.
	keys := chain
	if len(keys) != len(blocks) {
		keys = nil
	}
	var at []int
	for i := len(blocks) - 1; i >= 0; i-- {
		if !ModelOutput(blocks[i].Kind) {
			continue
		}
		if keys == nil {
			keys = chainOf(scope, blocks[:i+1], nil)
		}
		at = append(at, i)
		if longestOnly {
			break
		}
	}
	batch, canBatch := x.store.(BatchThreadStore)
	for start := 0; start < len(at); {
		// The longest alone first (a continuation is found there), then
		// the others by batches where the store can.
		n := 1
		if start > 0 && canBatch {
			n = min(lookupBatch, len(at)-start)
		}
		group := make([]string, n)
		for j, i := range at[start : start+n] {
			group[j] = key(keys[i])
		}
		start += n
		var found map[string]string
		if n == 1 {
			v, ok, err := x.store.Get(ctx, group[0])
			if err != nil {
				return Ref{}, false, false, fmt.Errorf("thread the call: %w", err)
			}
			if ok {
				found = map[string]string{group[0]: v}
			}
		} else if found, err = batch.GetMany(ctx, group); err != nil {
			return Ref{}, false, false, fmt.Errorf("thread the call: %w", err)
		}
		for _, k := range group {
			v, ok := found[k]
			if !ok {
				continue
			}
			if ref, ok = parseRef(v); !ok {
				continue // not an entry this code wrote: ignore it
			}
			l, isLatest, err := x.store.Get(ctx, latestKey(ref.Conversation))
			if err != nil {
				return Ref{}, false, false, fmt.Errorf("thread the call: %w", err)
			}
			return ref, isLatest && l == strconv.Itoa(ref.Events), true, nil
		}
	}
	return Ref{}, false, false, nil
}

// lookupBatch is how many states a lookup asks a BatchThreadStore for at
// once (well under the 1,024 answers a JetStream batched get allows).
const lookupBatch = 128

// BatchThreadStore is a ThreadStore that can read many keys in one round
// trip (eventlog's threads bucket): a call whose history holds many model
// outputs never recorded (an app's first call through the gateway) is
// looked up in one or two round trips instead of one per output.
type BatchThreadStore interface {
	ThreadStore
	// GetMany returns the values of those keys that have one.
	GetMany(ctx context.Context, keys []string) (map[string]string, error)
}
