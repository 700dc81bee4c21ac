package calls

import (
	"iter"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// IndexedKeys returns the threading index's keys (see Threads) that the
// gateway's calls recorded in conversation conv wrote, found from the
// conversation's events in log order: the state each finished call left,
// the conversation's latest-call entry, the entries of its Responses API
// responses' IDs (for previous_response_id; a background response's too,
// running or ended) and of their output items' (for item references), of
// its imported calls, and of its first call if it failed (for the app's
// retry of it). Erasing a conversation
// removes them with it, so that no hash of its content stays and a later
// call re-sending its history starts a new conversation instead of
// reviving the erased one's ID.
//
// An event that cannot be read or folded ends the search: the keys found
// before it are returned with the error.
func IndexedKeys(conv string, evs iter.Seq2[events.Event, error]) ([]string, error) {
	turn := projector.New(conv)
	var keys []string
	// items are the IDs of the output items the outcome of call outcomeOf
	// appended so far: its blocks come before its inference.finished (in
	// step 1, or 2 for a background call's end).
	var items []string
	outcomeOf := ""
	// scopes are the calls' scopes (Request.Scope), which their states'
	// keys are of.
	scopes := map[string]string{}
	// finished: a gateway call of it finished, so a later failure is not
	// its first call's; began: the calls that began it (threading new).
	finished, began := false, map[string]bool{}
	for e, err := range evs {
		blocks := len(turn.Blocks)
		if err == nil {
			err = projector.Apply(turn, e)
		}
		if err != nil {
			return withLatest(conv, keys), err
		}
		if e.Actor != Actor {
			continue
		}
		if e.Step >= 1 && len(turn.Blocks) == blocks+1 {
			if e.Cause != outcomeOf {
				items, outcomeOf = items[:0], e.Cause
			}
			if id := itemID(turn.Blocks[blocks].Meta[MetaItem]); id != "" {
				items = append(items, id)
			}
		}
		if st, ok := e.Payload.(events.InferenceStarted); ok {
			if st.Gateway["source"] == SourceImport && st.Gateway["import"] != "" {
				keys = append(keys, importedKey(st.Gateway["import"]))
			}
			if sc := st.Gateway[MetaScope]; sc != "" {
				scopes[st.InferenceID] = sc
			}
			began[st.InferenceID] = st.Gateway["threading"] == ThreadNew
		}
		if failed, ok := e.Payload.(events.InferenceFailed); ok {
			if id := BackgroundResponseID(failed.Error); id != "" {
				// Indexed when it was queued, as a finished call's is.
				keys = append(keys, responseKey(id))
			} else if n := len(turn.Blocks); !finished && began[failed.InferenceID] && n > 0 {
				keys = append(keys, retryKey(ScopedChain(scopes[failed.InferenceID], turn.Blocks)[n-1]))
			}
			continue
		}
		fin, ok := e.Payload.(events.InferenceFinished)
		if !ok {
			continue
		}
		finished = true
		if fin.ResponseID != "" {
			keys = append(keys, responseKey(fin.ResponseID))
			if outcomeOf == e.Cause {
				for _, id := range items {
					keys = append(keys, itemKey(id))
				}
			}
		}
		if n := len(turn.Blocks); n > 0 && ModelOutput(turn.Blocks[n-1].Kind) {
			scope := scopes[fin.InferenceID]
			chain := ScopedChain(scope, turn.Blocks)
			keys = append(keys, stateKey(chain[n-1]))
			if k, ok := reasonlessState(scope, turn.Blocks); ok {
				keys = append(keys, k)
			}
			if k, ok := doublesState(scope, turn.Blocks, chain); ok {
				keys = append(keys, k)
			}
			keys = append(keys, legacyStateKeys(scope, turn.Blocks)...)
		}
	}
	for _, id := range backgroundResponses(turn.Data) {
		// Still running: indexed when it was queued.
		keys = append(keys, responseKey(id))
	}
	return withLatest(conv, keys), nil
}

func withLatest(conv string, keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	return append(keys, latestKey(conv))
}

// legacyStateKeys returns the keys the state of blocks had before tool
// calls' arguments were compared as JSON (legacyKey), where they differ
// from its keys now: a state recorded then is still erased with its
// conversation.
func legacyStateKeys(scope string, blocks []events.Block) []string {
	differs := false
	for i := range blocks {
		if b := &blocks[i]; b.Kind == events.KindToolCall && argumentsKey(b.Arguments) != b.Arguments {
			differs = true
			break
		}
	}
	if !differs {
		return nil
	}
	legacy := func(bs []events.Block) [32]byte {
		ks := make([][32]byte, len(bs))
		for i := range bs {
			ks[i] = legacyKey(&bs[i])
		}
		chain := chainOf(scope, bs, ks)
		return chain[len(chain)-1]
	}
	out := []string{stateKey(legacy(blocks))}
	if less := withoutReasoning(blocks); len(less) != len(blocks) && len(less) > 0 && ModelOutput(less[len(less)-1].Kind) {
		out = append(out, reasonlessKey(legacy(less)))
	}
	return out
}
