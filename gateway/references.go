package gateway

import (
	"context"
	"errors"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// resolveReferences reads the item references of a Responses API request
// (what an app with store on sends back for the provider's earlier
// output) as the items they name, found where a recorded call produced
// them (calls.Request.Resolve): the call is then threaded, planned and
// checked by what the model read, and still renders to the bytes the
// client sent. A reference the gateway cannot resolve (an item no call
// through it produced, an erased conversation's, an index it cannot read)
// is recorded as sent; each is counted (item_references_total).
func (r *Recorder) resolveReferences(ctx context.Context, req *calls.Request) *calls.Request {
	ids := req.References()
	if len(ids) == 0 {
		return req
	}
	refs, err := r.threads.Items(ctx, ids)
	if err != nil {
		r.logger.Warn("gateway: threading index unreadable; the call's item references are recorded as sent", "err", err)
		refs = nil
	}
	found := make(map[string][]events.Block, len(refs))
	loaded := map[calls.Ref][]events.Block{}
	for _, id := range ids {
		ref, ok := refs[id]
		if !ok {
			continue
		}
		if bs, ok := r.cache.itemBlocks(ref.Conversation, id); ok {
			found[id] = bs
			continue
		}
		blocks, ok := loaded[ref]
		if !ok {
			blocks = r.stateBlocks(ctx, ref)
			loaded[ref] = blocks
		}
		if bs, ok := calls.ItemBlocks(blocks, id); ok {
			found[id] = bs
		}
	}
	r.metrics.references.WithLabelValues("resolved").Add(float64(len(found)))
	r.metrics.references.WithLabelValues("unresolved").Add(float64(len(ids) - len(found)))
	return req.Resolve(found)
}

// stateBlocks returns the blocks of the state ref names, loaded from the
// log; nil when it holds none (an erased conversation) or cannot be read
// (logged: the reference is then recorded as sent).
func (r *Recorder) stateBlocks(ctx context.Context, ref calls.Ref) []events.Block {
	turn, err := r.log.LoadAt(ctx, ref.Conversation, ref.Events)
	if err != nil {
		if !errors.Is(err, eventlog.ErrNotFound) {
			r.logger.Warn("gateway: the conversation an item reference names cannot be read; the reference is recorded as sent",
				"conversation", ref.Conversation, "err", err)
		}
		return nil
	}
	return turn.Blocks
}
