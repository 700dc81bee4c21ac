package calls

// This file holds what a call's answer gave IDs to that later calls name
// back, and where the threading index finds them: a Responses API
// response (previous_response_id) and its output items (item references).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/turnlog/turnlog/events"
)

// Answer is what a call's answer gave IDs to that a later call may name
// back: the Responses API's response (previous_response_id) and its
// output items (item references). Zero for the other APIs.
type Answer struct {
	ResponseID string
	ItemIDs    []string
}

// AnswerOf is the Answer of output, a response of api (nil: none).
func AnswerOf(api API, output *Output) Answer {
	if output == nil || api != Responses {
		return Answer{}
	}
	return Answer{ResponseID: output.ResponseID, ItemIDs: output.ItemIDs()}
}

func responseKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return "r." + hex.EncodeToString(h[:])
}

func itemKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return "o." + hex.EncodeToString(h[:])
}

// Response returns where response id left the conversation it was
// produced in, and whether that is still the conversation's latest call
// (a call naming it continues the conversation) or not (it branches
// there, as a fork). An entry written before positions were kept names
// the conversation alone: Events is -1 and latest true.
func (x *Threads) Response(ctx context.Context, id string) (ref Ref, latest, ok bool, err error) {
	if id == "" {
		return Ref{}, false, false, nil
	}
	v, ok, err := x.store.Get(ctx, responseKey(id))
	if err != nil || !ok {
		return Ref{}, false, false, wrapResponseErr(err)
	}
	ref, isRef := parseRef(v)
	if !isRef {
		if events.ValidateConversationID(v) != nil {
			return Ref{}, false, false, nil // not an entry this code wrote
		}
		return Ref{Conversation: v, Events: -1}, true, true, nil
	}
	l, isLatest, err := x.store.Get(ctx, latestKey(ref.Conversation))
	if err != nil {
		return Ref{}, false, false, wrapResponseErr(err)
	}
	return ref, !isLatest || l == strconv.Itoa(ref.Events), true, nil
}

func wrapResponseErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("thread the call by its previous_response_id: %w", err)
}

// Items returns, for each of the output items ids that a recorded call
// produced, the state that call left (its conversation holds the item
// there, see ItemBlocks); ids not found are absent. One round trip on a
// store that reads many keys at once.
func (x *Threads) Items(ctx context.Context, ids []string) (map[string]Ref, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = itemKey(id)
	}
	var found map[string]string
	if bs, ok := x.store.(BatchThreadStore); ok {
		var err error
		if found, err = bs.GetMany(ctx, keys); err != nil {
			return nil, fmt.Errorf("find the items the call references: %w", err)
		}
	} else {
		found = map[string]string{}
		for _, k := range keys {
			v, ok, err := x.store.Get(ctx, k)
			if err != nil {
				return nil, fmt.Errorf("find the items the call references: %w", err)
			}
			if ok {
				found[k] = v
			}
		}
	}
	refs := make(map[string]Ref, len(found))
	for i, k := range keys {
		if ref, ok := parseRef(found[k]); ok {
			refs[ids[i]] = ref
		}
	}
	return refs, nil
}
