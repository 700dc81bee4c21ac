package gateway

import (
	"context"
	"errors"
	"strings"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Threading: which conversation a call belongs to (named, by
// previous_response_id, or inferred from its content), and the keys by
// which later calls find the state a call left.

// thread reads the call and finds its conversation: the one named (by
// Turnlog-Conversation, or the provider's conversation), the one of
// previous_response_id, or by content (a continuation, or a fork of an
// earlier state); else a new one. A threading index that cannot be read
// starts a new conversation (logged): the call is recorded all the same.
func (r *Recorder) thread(ctx context.Context, p *Pending, in Call) (fork *calls.Ref, fresh bool) {
	c := p.call
	c.Wire, c.API = calls.WireSHA256(in.Body), in.API
	var req *calls.Request
	var err error
	if in.Unread != "" {
		err = errors.New(in.Unread)
		p.lacks = "by its hash alone: " + in.Unread
		r.metrics.unstored.WithLabelValues("input").Inc()
	} else {
		req, err = r.parse.ParseRequest(in.API, in.Body)
	}
	if err != nil {
		c.Unparsed = err.Error()
	} else {
		req = r.resolveReferences(ctx, req)
		c.Request, p.parsed = req, true
	}
	switch {
	case in.Conversation != "":
		p.conv, c.Threading = in.Conversation, calls.ThreadExplicit
		if in.Threading != "" {
			c.Threading = in.Threading
		}
	case req != nil && req.ProviderConversation != "":
		// The provider holds the conversation (OpenAI's Conversations
		// API): its calls are one conversation, by its ID.
		p.conv, c.Threading, p.named = calls.ProviderConversationID(req.ProviderConversation), calls.ThreadExplicit, true
	case req != nil && req.PreviousResponseID != "":
		ref, latest, ok, err := r.threads.Response(ctx, req.PreviousResponseID)
		if err != nil {
			r.logger.Warn("gateway: threading index unreadable; the call starts a conversation", "err", err)
		}
		switch {
		case ok && latest:
			p.conv, c.Threading = ref.Conversation, calls.ThreadExplicit
			if ref.Events >= 0 {
				p.response = &ref
			}
		case ok:
			c.Threading = calls.ThreadExplicit
			if from, state, resends := r.resending(ctx, ref, req); resends {
				// A chained tool loop's step, sending the steps after
				// that response again: it goes on from them.
				p.conv, c.ResentFrom, p.resent = ref.Conversation, from, &state
				break
			}
			// An earlier call's response (an app regenerating from an
			// earlier answer): the conversation branches there, as a
			// fork, so that its history stays what each model saw.
			fork = &ref
		}
	case req != nil:
		blocks, chain := req.RequestBlocks(), req.RequestChain()
		if r.local != nil {
			// This gateway recorded the state the call continues, as its
			// conversation's latest call: take it without a round trip to
			// the shared index. recordInput verifies the guess against
			// the log (the Turn ends at that state and the append's fence
			// holds), and asks the shared index when it does not hold.
			if ref, latest, ok, _ := r.local.FindLongest(ctx, req.Scope, blocks, chain); ok && latest {
				p.conv, c.Threading, p.guess = ref.Conversation, calls.ThreadInferred, &ref
				break
			}
		}
		fork = r.infer(ctx, p, req.Scope, blocks, chain)
		if p.conv == "" && fork == nil && !req.Continues() && calls.Retried(in.Headers) {
			// The app's retry of a call that failed: if it was its
			// conversation's first, the conversation it started.
			ref, ok, err := r.threads.FindRetried(ctx, req.Scope, blocks, chain)
			if err != nil {
				r.logger.Warn("gateway: threading index unreadable; the call starts a conversation", "err", err)
			}
			if ok {
				p.conv, c.Threading = ref.Conversation, calls.ThreadInferred
			}
		}
	}
	fresh = p.conv == ""
	if fresh {
		p.conv = ulid.Make().String()
		if c.Threading == "" {
			c.Threading = calls.ThreadNew
		}
	}
	p.threading = c.Threading
	return fork, fresh
}

// infer threads a call by content with the shared index: a continuation
// of the latest call of a conversation (p.conv set), a fork of an earlier
// state (returned), or neither.
func (r *Recorder) infer(ctx context.Context, p *Pending, scope string, blocks []events.Block, chain [][32]byte) (fork *calls.Ref) {
	ref, latest, ok, err := r.threads.Find(ctx, scope, blocks, chain)
	if err != nil {
		r.logger.Warn("gateway: threading index unreadable; the call starts a conversation", "err", err)
	}
	if err == nil && !(ok && latest) {
		// No state continued as the call sends it: one whose items the
		// call continues with other instructions, found only here.
		if h, hl, hok := r.handedOff(ctx, scope, blocks); hok {
			ref, latest, ok = h, hl, true
		}
	}
	if !ok {
		return nil
	}
	p.call.Threading = calls.ThreadInferred
	if latest {
		p.conv, p.continues = ref.Conversation, &ref
		return nil
	}
	return &ref
}

// unguess threads a call whose guess (see thread) did not hold with the
// shared index, as if it had been asked first.
func (r *Recorder) unguess(ctx context.Context, p *Pending, req *calls.Request) (fork *calls.Ref, fresh bool) {
	p.guess, p.continues, p.conv, p.call.Threading = nil, nil, "", ""
	fork = r.infer(ctx, p, req.Scope, req.RequestBlocks(), req.RequestChain())
	if fresh = p.conv == ""; fresh {
		p.conv = ulid.Make().String()
		if p.call.Threading == "" {
			p.call.Threading = calls.ThreadNew
		}
	}
	p.threading = p.call.Threading
	return fork, fresh
}

// stateChain returns the chain (calls.Chain) of the Turn's blocks after a
// call that sent its whole input, from what the call already hashed: its
// input's chain (the Turn holds its blocks in the call's order, as
// PlanInput checked) extended by its output's keys. nil when that does not
// hold (a call continuing the provider's history, other calls' blocks
// folded in after a conflict, or loaded when a stopped import is resumed:
// rehash): Record then hashes the Turn.
func stateChain(c *calls.Call, o calls.Outcome, turn *projector.Turn, rehash bool) [][32]byte {
	if rehash || c.Request == nil || c.Request.Continues() || o.Output == nil {
		return nil
	}
	chain := c.Request.RequestChain()
	out := o.Output.Keys()
	if len(chain)+len(out) != len(turn.Blocks) {
		return nil
	}
	return calls.ExtendChain(chain, out)
}

// mirrorStore is a shared threading store with this gateway's copy of
// what it wrote, read while NATS is away.
type mirrorStore struct{ shared, local calls.ThreadStore }

// Get reads a state's entry from this gateway's copy when it has it (what
// a state maps to is written once, by the call that made it; a state whose
// conversation was erased since is found missing when it is loaded, see
// recordInput), and everything else from the shared store: the latest
// call of each conversation, and a response's conversation (an erase
// removes it there, and previous_response_id would otherwise name the
// erased conversation). While the shared store cannot be read, a
// response's entry comes from this gateway's copy.
func (m mirrorStore) Get(ctx context.Context, key string) (string, bool, error) {
	if strings.HasPrefix(key, "s.") {
		if v, ok, _ := m.local.Get(ctx, key); ok {
			return v, true, nil
		}
	}
	v, ok, err := m.shared.Get(ctx, key)
	if err != nil && strings.HasPrefix(key, "r.") {
		if lv, lok, _ := m.local.Get(ctx, key); lok {
			return lv, true, nil
		}
	}
	return v, ok, err
}

// GetMany is Get of many keys: the states this gateway wrote from its
// copy, the others from the shared store in one round trip when it can
// (calls.BatchThreadStore).
func (m mirrorStore) GetMany(ctx context.Context, keys []string) (map[string]string, error) {
	found := make(map[string]string)
	var rest []string
	for _, k := range keys {
		if strings.HasPrefix(k, "s.") {
			if v, ok, _ := m.local.Get(ctx, k); ok {
				found[k] = v
				continue
			}
		}
		rest = append(rest, k)
	}
	if len(rest) == 0 {
		return found, nil
	}
	bs, ok := m.shared.(calls.BatchThreadStore)
	if !ok {
		for _, k := range rest {
			v, ok, err := m.Get(ctx, k)
			if err != nil {
				return nil, err
			}
			if ok {
				found[k] = v
			}
		}
		return found, nil
	}
	shared, err := bs.GetMany(ctx, rest)
	if err != nil {
		return nil, err
	}
	for k, v := range shared {
		found[k] = v
	}
	return found, nil
}

func (m mirrorStore) Put(ctx context.Context, pairs map[string]string) error {
	_ = m.local.Put(ctx, pairs)
	return m.shared.Put(ctx, pairs)
}

// Swap swaps in both stores (calls.SwapThreadStore): the shared one's
// answer is the one that counts.
func (m mirrorStore) Swap(ctx context.Context, key, old, new string) (bool, error) {
	if ls, ok := m.local.(calls.SwapThreadStore); ok {
		_, _ = ls.Swap(ctx, key, old, new)
	}
	if ss, ok := m.shared.(calls.SwapThreadStore); ok {
		return ss.Swap(ctx, key, old, new)
	}
	return false, nil
}

// PutAsync writes this gateway's copy at once and publishes to the shared
// store, when it can publish without waiting (calls.AsyncThreadStore).
func (m mirrorStore) PutAsync(pairs map[string]string) (func(context.Context) error, error) {
	_ = m.local.Put(context.Background(), pairs)
	if as, ok := m.shared.(calls.AsyncThreadStore); ok {
		return as.PutAsync(pairs)
	}
	return func(ctx context.Context) error { return m.shared.Put(ctx, pairs) }, nil
}
