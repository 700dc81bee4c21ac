package calls

// A state's key: the chain of its blocks' content keys, each link the
// SHA-256 of the previous link and the next block's key, so the state of
// every prefix of a call's input is known without rehashing; and a
// request's blocks, keys and chain, computed once per request.

import (
	"crypto/sha256"

	"github.com/turnlog/turnlog/events"
)

// Chain returns the state keys of each prefix of blocks: key i covers
// blocks[:i+1].
func Chain(blocks []events.Block) [][32]byte { return chainOf("", blocks, nil) }

// ScopedChain is Chain within scope, the end user a call names
// (Request.Scope): the same blocks of two end users are two states, so
// their chats are never threaded into one conversation. The empty scope's
// chain is Chain.
func ScopedChain(scope string, blocks []events.Block) [][32]byte { return chainOf(scope, blocks, nil) }

// scopeSeed is the link a scope's chain starts from: zero for none (the
// chains recorded before scopes existed), else a hash of the scope.
func scopeSeed(scope string) [32]byte {
	if scope == "" {
		return [32]byte{}
	}
	return sha256.Sum256([]byte("turnlog threading scope\x00" + scope))
}

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

// chainOf is ScopedChain with the blocks' content keys when known (nil:
// computed).
func chainOf(scope string, blocks []events.Block, keys [][32]byte) [][32]byte {
	out := make([][32]byte, len(blocks))
	prev := scopeSeed(scope)
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

// RequestChain returns ScopedChain(Scope, RequestBlocks()), from
// RequestKeys, computed
// once per request: the lookup of the call's conversation and the entry of
// the state it leaves both take it. The caller must not change it.
func (r *Request) RequestChain() [][32]byte {
	if r.requestChain == nil {
		r.requestChain = chainOf(r.Scope, r.RequestBlocks(), r.RequestKeys())
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
