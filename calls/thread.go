package calls

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

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
//	r.<hex SHA-256 of a response ID>              "<conversation>"
//	i.<hash of an imported call's line>           "<conversation>" it was recorded in
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

// Chain returns the state keys of each prefix of blocks: key i covers
// blocks[:i+1].
func Chain(blocks []events.Block) [][32]byte { return chainOf(blocks, nil) }

// ExtendChain returns the chain (see Chain) of blocks followed by more,
// given chain, the chain of blocks, and the content keys of more (Key):
// the state a call leaves is its input's chain, known from its lookup,
// extended by its output. chain is not changed.
func ExtendChain(chain [][32]byte, moreKeys [][32]byte) [][32]byte {
	out := make([][32]byte, len(chain), len(chain)+len(moreKeys))
	copy(out, chain)
	var prev [32]byte
	if len(chain) > 0 {
		prev = chain[len(chain)-1]
	}
	for _, k := range moreKeys {
		prev = link(prev, k)
		out = append(out, prev)
	}
	return out
}

// link is the chain's key after prev for a block of content key k.
func link(prev, k [32]byte) [32]byte {
	var buf [64]byte
	copy(buf[:32], prev[:])
	copy(buf[32:], k[:])
	return sha256.Sum256(buf[:])
}

// chainOf is Chain with the blocks' content keys when known (nil: computed).
func chainOf(blocks []events.Block, keys [][32]byte) [][32]byte {
	out := make([][32]byte, len(blocks))
	var prev [32]byte
	for i := range blocks {
		var k [32]byte
		if keys != nil {
			k = keys[i]
		} else {
			k = Key(&blocks[i])
		}
		out[i] = link(prev, k)
		prev = out[i]
	}
	return out
}

// output reports whether a block of kind k can end a recorded state: what
// a model writes.
func output(k events.Kind) bool {
	return k == events.KindLLMText || k == events.KindToolCall || k == events.KindReasoning
}

func stateKey(k [32]byte) string    { return "s." + hex.EncodeToString(k[:]) }
func importedKey(key string) string { return "i." + key }
func latestKey(conv string) string  { return "c." + conv }
func responseKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return "r." + hex.EncodeToString(h[:])
}
func (r Ref) value() string { return r.Conversation + "@" + strconv.Itoa(r.Events) }

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
// latest call, and that the call's response (Responses' ID, "" for none)
// was produced in conv. A state that does not end with a model's output
// block is not recorded (nothing could continue it by content).
//
// chain, when not nil, is Chain(blocks), known already.
func (x *Threads) Record(ctx context.Context, conv string, n int, blocks []events.Block, chain [][32]byte, responseID string) error {
	pairs := recordPairs(conv, n, blocks, chain, responseID)
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
func (x *Threads) RecordAsync(ctx context.Context, conv string, n int, blocks []events.Block, chain [][32]byte, responseID string) (wait func(context.Context) error, err error) {
	done := func(context.Context) error { return nil }
	pairs := recordPairs(conv, n, blocks, chain, responseID)
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

// recordPairs are the entries Record writes.
func recordPairs(conv string, n int, blocks []events.Block, chain [][32]byte, responseID string) map[string]string {
	pairs := map[string]string{}
	if len(blocks) > 0 && output(blocks[len(blocks)-1].Kind) {
		if len(chain) != len(blocks) {
			chain = Chain(blocks)
		}
		pairs[stateKey(chain[len(chain)-1])] = Ref{conv, n}.value()
		pairs[latestKey(conv)] = strconv.Itoa(n)
	}
	if responseID != "" {
		pairs[responseKey(responseID)] = conv
	}
	return pairs
}

// Find returns the recorded state that the longest prefix of blocks is,
// and whether it is its conversation's latest call (continue) or not
// (fork there). ok is false when no prefix was recorded. chain, when not
// nil, is Chain(blocks), known already (Request.RequestChain).
func (x *Threads) Find(ctx context.Context, blocks []events.Block, chain [][32]byte) (ref Ref, latest, ok bool, err error) {
	return x.find(ctx, blocks, chain, false)
}

// FindLongest is Find tried only at the longest prefix that can be a
// recorded state (the one ending with the input's last output block): a
// match there is the match Find would return from any store holding it,
// since no longer prefix can be a state. The gateway asks its own copy of
// the index this way before the shared one.
func (x *Threads) FindLongest(ctx context.Context, blocks []events.Block, chain [][32]byte) (ref Ref, latest, ok bool, err error) {
	return x.find(ctx, blocks, chain, true)
}

func (x *Threads) find(ctx context.Context, blocks []events.Block, chain [][32]byte, longestOnly bool) (ref Ref, latest, ok bool, err error) {
	// The candidates: the prefixes that end with an output block, longest
	// first, by the index of that block. Each is named (hex) only when
	// its group is asked: a continuation is found at the first.
	keys := chain
	if len(keys) != len(blocks) {
		keys = nil
	}
	var at []int
	for i := len(blocks) - 1; i >= 0; i-- {
		if !output(blocks[i].Kind) {
			continue
		}
		if keys == nil {
			keys = chainOf(blocks[:i+1], nil)
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
			group[j] = stateKey(keys[i])
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

// Imported returns the conversation the imported call named by key (a
// hash of its line, see Call.Import) was recorded in; ok is false when it
// was not imported. pending is true when an import began to record it
// there and did not note it recorded (ImportPending): it may be there
// whole, in part (its input without its outcome) or not at all.
func (x *Threads) Imported(ctx context.Context, key string) (conv string, pending, ok bool, err error) {
	v, ok, err := x.store.Get(ctx, importedKey(key))
	if err != nil {
		return "", false, false, fmt.Errorf("look up an imported call: %w", err)
	}
	if conv, found := strings.CutPrefix(v, pendingPrefix); found {
		return conv, true, ok, nil
	}
	return v, false, ok, nil
}

// ErasedKey is the entry that says when conversation conv was erased
// (RFC 3339, UTC): a call a gateway kept in its spool while NATS was away,
// made before that time, is not recorded into it when NATS is back. It
// names the conversation by a hash: an erased conversation's ID (which a
// client may have chosen) is not kept.
func ErasedKey(conv string) string {
	h := sha256.Sum256([]byte(conv))
	return "e." + hex.EncodeToString(h[:])
}

// ErasedAt returns when conversation conv was last erased; ok is false
// when it never was (or its entry is not one this code wrote).
func (x *Threads) ErasedAt(ctx context.Context, conv string) (at time.Time, ok bool, err error) {
	v, ok, err := x.store.Get(ctx, ErasedKey(conv))
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	at, err = time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false, nil
	}
	return at, true, nil
}

// pendingPrefix marks an imported call's entry as pending (a conversation
// ID holds no space).
const pendingPrefix = "pending "

// ImportPending notes that the imported call named by key is about to be
// recorded in conv, before anything of it is stored: an import that stops
// before RecordImported (a crash) leaves the note, and the next import
// looks for the call in conv instead of recording it a second time.
func (x *Threads) ImportPending(ctx context.Context, key, conv string) error {
	if err := x.store.Put(ctx, map[string]string{importedKey(key): pendingPrefix + conv}); err != nil {
		return fmt.Errorf("note an imported call: %w", err)
	}
	return nil
}

// RecordImported notes that the imported call named by key was recorded
// in conv, so that importing it again records nothing.
func (x *Threads) RecordImported(ctx context.Context, key, conv string) error {
	if err := x.store.Put(ctx, map[string]string{importedKey(key): conv}); err != nil {
		return fmt.Errorf("note an imported call: %w", err)
	}
	return nil
}

// Response returns the conversation response id was produced in.
func (x *Threads) Response(ctx context.Context, id string) (string, bool, error) {
	if id == "" {
		return "", false, nil
	}
	v, ok, err := x.store.Get(ctx, responseKey(id))
	if err != nil {
		return "", false, fmt.Errorf("thread the call by its previous_response_id: %w", err)
	}
	return v, ok, nil
}

// MemStore is a ThreadStore in one process's memory, holding at most its
// limit of entries (the least recently written are forgotten first): for
// tests, and for a gateway that runs alone without a shared store.
type MemStore struct {
	mu    sync.Mutex
	limit int
	m     map[string]*list.Element
	order *list.List // of [2]string, most recent first
}

// NewMemStore returns a MemStore of up to limit entries.
func NewMemStore(limit int) *MemStore {
	return &MemStore{limit: max(limit, 1), m: map[string]*list.Element{}, order: list.New()}
}

// Get implements ThreadStore.
func (s *MemStore) Get(_ context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[key]; ok {
		return el.Value.([2]string)[1], true, nil
	}
	return "", false, nil
}

// Put implements ThreadStore.
func (s *MemStore) Put(_ context.Context, pairs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range pairs {
		if el, ok := s.m[k]; ok {
			s.order.Remove(el)
		}
		s.m[k] = s.order.PushFront([2]string{k, v})
	}
	for s.order.Len() > s.limit {
		el := s.order.Back()
		s.order.Remove(el)
		delete(s.m, el.Value.([2]string)[0])
	}
	return nil
}

// ForgetConversation removes the entries that name conversation conv
// (its states, its latest call, its responses and imported calls): what a
// gateway's own copy of the index keeps of a conversation erased since.
func (s *MemStore) ForgetConversation(conv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, el := range s.m {
		v := el.Value.([2]string)[1]
		var names bool
		switch {
		case k == latestKey(conv):
			names = true
		case strings.HasPrefix(k, "s."):
			ref, ok := parseRef(v)
			names = ok && ref.Conversation == conv
		case strings.HasPrefix(k, "r."), strings.HasPrefix(k, "i."):
			names = v == conv || v == pendingPrefix+conv
		}
		if names {
			s.order.Remove(el)
			delete(s.m, k)
		}
	}
}

// RequestBlocks returns the request's input blocks in order, what Find
// takes, gathered once per request: the caller must not change them, nor
// append to the slice in place.
func (r *Request) RequestBlocks() []events.Block {
	if r.requestBlocks == nil {
		bs := make([]events.Block, 0, r.blockCount())
		for _, it := range r.Items {
			bs = append(bs, it.Blocks...)
		}
		r.requestBlocks = bs[:len(bs):len(bs)]
	}
	return r.requestBlocks
}

func (r *Request) blockCount() int {
	n := 0
	for i := range r.Items {
		n += len(r.Items[i].Blocks)
	}
	return n
}

// RequestKeys returns the content keys (Key) of RequestBlocks, computed
// once per item (and kept with it in a ParseCache) and once per request:
// the caller must not change them.
func (r *Request) RequestKeys() [][32]byte {
	if r.requestKeys == nil {
		ks := make([][32]byte, 0, r.blockCount())
		for i := range r.Items {
			ks = append(ks, r.Items[i].keys()...)
		}
		r.requestKeys = ks[:len(ks):len(ks)]
	}
	return r.requestKeys
}

// RequestChain returns Chain(RequestBlocks()), from RequestKeys, computed
// once per request: the lookup of the call's conversation and the entry of
// the state it leaves both take it. The caller must not change it.
func (r *Request) RequestChain() [][32]byte {
	if r.requestChain == nil {
		r.requestChain = chainOf(r.RequestBlocks(), r.RequestKeys())
	}
	return r.requestChain
}

// keys returns the item's blocks' content keys.
func (it *Item) keys() [][32]byte {
	if len(it.blockKeys) != len(it.Blocks) {
		it.blockKeys = make([][32]byte, len(it.Blocks))
		for i := range it.Blocks {
			it.blockKeys[i] = Key(&it.Blocks[i])
		}
	}
	return it.blockKeys
}
