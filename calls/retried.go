package calls

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// An app's SDK retries a call that failed (a 5xx, Anthropic's 529
// "overloaded", a rate limit) with the same body, a moment later. A retry
// of a later call continues the state its conversation's last finished
// call left, as any call does. A retry of a conversation's first call has
// no such state: the failed attempt started a conversation holding its
// input and the failure, and the retry, found by content alone, would
// start a second one, splitting the app's chat in two. Two chats whose
// first calls are equal must never be merged, so the failed first call's
// input is indexed under a key of its own, which only a call that says it
// is a retry looks up (the SDKs built by Stainless, OpenAI's and
// Anthropic's in every language, send X-Stainless-Retry-Count: 1 and up
// on a retry).

// retryKey is the key of a failed first call's input state (see above):
// a.<hex SHA-256 chain of its input blocks>.
func retryKey(k [32]byte) string { return "a." + hex.EncodeToString(k[:]) }

// RecordFailedFirst notes that conversation conv, after its n-th event,
// ends with its first call, which failed without an answer and whose
// input was blocks (in scope): the app's retry of that call continues conv
// (FindRetried) instead of starting a conversation of its own.
func (x *Threads) RecordFailedFirst(ctx context.Context, conv string, n int, scope string, blocks []events.Block) error {
	if len(blocks) == 0 {
		return nil
	}
	chain := ScopedChain(scope, blocks)
	if err := x.store.Put(ctx, map[string]string{retryKey(chain[len(chain)-1]): Ref{conv, n}.value()}); err != nil {
		return fmt.Errorf("record the failed call for its retry: %w", err)
	}
	return nil
}

// FindRetried returns the conversation whose first call failed with input
// blocks (in scope: RecordFailedFirst), while no call of it has finished
// since: where a retry of that call belongs. Only a call that says it is a
// retry may be threaded by it. chain, when not nil, is ScopedChain(scope,
// blocks), known already.
func (x *Threads) FindRetried(ctx context.Context, scope string, blocks []events.Block, chain [][32]byte) (Ref, bool, error) {
	if len(blocks) == 0 {
		return Ref{}, false, nil
	}
	if len(chain) != len(blocks) {
		chain = ScopedChain(scope, blocks)
	}
	v, ok, err := x.store.Get(ctx, retryKey(chain[len(chain)-1]))
	if err != nil || !ok {
		return Ref{}, false, err
	}
	ref, ok := parseRef(v)
	if !ok {
		return Ref{}, false, nil
	}
	// A call of it that finished since has its own state, which a
	// retry of the first call does not continue.
	if _, finished, err := x.store.Get(ctx, latestKey(ref.Conversation)); err != nil || finished {
		return Ref{}, false, err
	}
	return ref, true, nil
}
