package projector

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/turnlog/turnlog/events"
)

// Errors the fold returns for events it cannot apply. Each is wrapped with
// the event's position and type; the Turn is left exactly as it was.
var (
	// ErrMissingBlock: the event refers to a block the Turn does not hold.
	ErrMissingBlock = errors.New("refers to a block that is not in the turn")
	// ErrDuplicateBlock: the event would add a block whose ID is taken.
	ErrDuplicateBlock = errors.New("block ID already in the turn")
	// ErrBadOrder: a reorder does not list every block exactly once.
	ErrBadOrder = errors.New("reorder must list every block ID exactly once")
	// ErrMismatch: the event contradicts the Turn (wrong conversation, a
	// replaced text that is not the current one, a block of the wrong kind).
	ErrMismatch = errors.New("event does not match the turn")
)

// Apply folds one event into t. It validates everything first and only then
// changes t, so an event that is rejected leaves t as it was. Unknown types,
// versions newer than this build and references to missing blocks are
// errors: the fold never skips an event silently.
func Apply(t *Turn, e events.Event) error {
	if err := apply(t, e); err != nil {
		return fmt.Errorf("apply event %d (%s): %w", t.Events+1, e.Type, err)
	}
	t.Conversation = e.Conversation
	t.Events++
	return nil
}

// ApplyAll folds events in order and stops at the first error.
func ApplyAll(t *Turn, evs []events.Event) error {
	for _, e := range evs {
		if err := Apply(t, e); err != nil {
			return err
		}
	}
	return nil
}

func apply(t *Turn, e events.Event) error {
	if cur := events.CurrentVersion(e.Type); cur == 0 {
		return fmt.Errorf("%w %q", events.ErrUnknownEvent, e.Type)
	} else if e.Version > cur {
		return fmt.Errorf("version %d: %w (it knows up to %d)", e.Version, events.ErrNewerVersion, cur)
	}
	if err := e.Validate(); err != nil {
		return err
	}
	if t.Conversation != "" && e.Conversation != t.Conversation {
		return fmt.Errorf("%w: event of conversation %q applied to %q", ErrMismatch, e.Conversation, t.Conversation)
	}

	switch p := e.Payload.(type) {
	case events.ConversationStarted:
		return started(t, p)
	case events.UserAppended:
		return t.push(Block{ID: p.BlockID, Kind: events.KindUser, Text: p.Text, Trust: p.Trust, Meta: cloneMeta(p.Meta)})
	case events.SystemPromptSet:
		if p.Index > len(t.Blocks) {
			return fmt.Errorf("%w: index %d, but the turn has %d blocks", ErrMismatch, p.Index, len(t.Blocks))
		}
		return t.insert(p.Index, Block{ID: p.BlockID, Kind: events.KindSystem, Text: p.Text, Trust: p.Trust, Meta: cloneMeta(p.Meta),
			Untrusted: cloneSpans(p.Untrusted)})
	case events.SystemPromptReplaced:
		i, err := t.need(p.BlockID)
		if err != nil {
			return err
		}
		b := &t.Blocks[i]
		if b.Kind != events.KindSystem {
			return fmt.Errorf("%w: block %s is %s, not system", ErrMismatch, p.BlockID, b.Kind)
		}
		if b.Text != p.Previous {
			return fmt.Errorf("%w: block %s's text is not the previous text the event records", ErrMismatch, p.BlockID)
		}
		b.Text = p.Text
		b.Meta = merge(b.Meta, p.Meta)
		// The spans describe the text: a new text has its own, and none
		// means the replacing text is the operator's throughout.
		b.Untrusted = cloneSpans(p.Untrusted)
		t.forget(i)
		return nil
	case events.SystemPromptLocked:
		return lock(t, p.BlockID, e.Actor, true)
	case events.SystemPromptUnlocked:
		return lock(t, p.BlockID, e.Actor, false)
	case events.ReasoningAppended:
		return t.push(Block{ID: p.BlockID, Kind: events.KindReasoning, Text: p.Text, Encrypted: p.Encrypted, Meta: cloneMeta(p.Meta)})
	case events.LLMTextAppended:
		return t.push(Block{ID: p.BlockID, Kind: events.KindLLMText, Text: p.Text, Meta: cloneMeta(p.Meta)})
	case events.ToolCalled:
		return t.push(Block{ID: p.BlockID, Kind: events.KindToolCall, CallID: p.CallID, ToolName: p.Name, Arguments: p.Arguments, Meta: cloneMeta(p.Meta)})
	case events.ToolResult:
		return t.push(Block{ID: p.BlockID, Kind: events.KindToolResult, CallID: p.CallID, Text: p.Text, IsError: p.IsError, Meta: cloneMeta(p.Meta)})
	case events.BlocksReordered:
		return reorder(t, p.Order)
	case events.BlocksRemoved:
		drop, err := t.set("block_ids", p.BlockIDs)
		if err != nil {
			return err
		}
		t.remove(drop, -1, nil)
		return nil
	case events.BlockAnnotated:
		i, err := t.need(p.BlockID)
		if err != nil {
			return err
		}
		t.Blocks[i].Meta = merge(t.Blocks[i].Meta, p.Meta)
		t.forget(i)
		return nil
	case events.BlockSplit:
		return split(t, p)
	case events.BlockInserted:
		if p.Index > len(t.Blocks) {
			return fmt.Errorf("%w: index %d, but the turn has %d blocks", ErrMismatch, p.Index, len(t.Blocks))
		}
		return t.insert(p.Index, own(p.Block))
	case events.TurnCompacted:
		return compact(t, p)
	case events.DataSet:
		if t.Data == nil && len(p.Values) > 0 {
			t.Data = make(map[string]string, len(p.Values))
		}
		maps.Copy(t.Data, p.Values)
		for _, k := range p.Unset {
			delete(t.Data, k)
		}
		if len(t.Data) == 0 {
			// No data is nil, however it was reached: a snapshot drops an
			// empty map, and a Turn must not differ from its snapshot.
			t.Data = nil
		}
		return nil
	case events.InferenceStarted, events.InferenceFinished, events.InferenceFailed,
		events.RequestCompleted, events.RequestFailed, events.MessageRemoved, events.FindingRecorded:
		// Facts about the conversation, not changes to its Turn: they only
		// advance the position.
		return nil
	default:
		return fmt.Errorf("%w %q: the projector has no rule for it", events.ErrUnknownEvent, e.Type)
	}
}

// lock sets or lifts the systemprompt.lock of a system block. The lock's
// value is the actor who set it, so the Turn itself says who froze the
// prompt. Locking a locked block, or unlocking one that is not locked,
// contradicts the Turn: whoever wrote the event read a state that was not
// the log's.
func lock(t *Turn, id, actor string, locked bool) error {
	i, err := t.need(id)
	if err != nil {
		return err
	}
	b := &t.Blocks[i]
	if b.Kind != events.KindSystem {
		return fmt.Errorf("%w: block %s is %s; only system blocks are locked", ErrMismatch, id, b.Kind)
	}
	holder, isLocked := b.Meta[events.MetaSystemPromptLock]
	isLocked = isLocked && holder != ""
	switch {
	case locked && isLocked:
		return fmt.Errorf("%w: block %s is already locked (by %q)", ErrMismatch, id, holder)
	case !locked && !isLocked:
		return fmt.Errorf("%w: block %s is not locked", ErrMismatch, id)
	}
	value := ""
	if locked {
		value = actor
	}
	b.Meta = merge(b.Meta, map[string]string{events.MetaSystemPromptLock: value})
	t.forget(i)
	return nil
}

func started(t *Turn, p events.ConversationStarted) error {
	if len(p.Blocks) == 0 && len(p.Data) == 0 {
		return nil
	}
	if len(t.Blocks) > 0 || len(t.Data) > 0 {
		return fmt.Errorf("%w: a conversation.started with blocks or data must come before any other content", ErrMismatch)
	}
	seen := make(map[string]bool, len(p.Blocks))
	for _, b := range p.Blocks {
		if seen[b.ID] {
			return fmt.Errorf("%w: %s", ErrDuplicateBlock, b.ID)
		}
		seen[b.ID] = true
	}
	if len(p.Blocks) > 0 {
		t.Blocks = make([]Block, len(p.Blocks))
		for i, b := range p.Blocks {
			t.Blocks[i] = own(b)
		}
	}
	t.pos, t.sums = nil, nil
	if len(p.Data) > 0 {
		t.Data = maps.Clone(p.Data)
	}
	return nil
}

func reorder(t *Turn, order []string) error {
	if len(order) != len(t.Blocks) {
		return fmt.Errorf("%w: it lists %d IDs, the turn has %d blocks", ErrBadOrder, len(order), len(t.Blocks))
	}
	idx := t.index()
	seen := make([]bool, len(t.Blocks))
	for _, id := range order {
		i, ok := idx[id]
		if !ok {
			return fmt.Errorf("%w: %w: %s", ErrBadOrder, ErrMissingBlock, id)
		}
		if seen[i] {
			return fmt.Errorf("%w: %s listed twice", ErrBadOrder, id)
		}
		seen[i] = true
	}
	next := make([]Block, len(order))
	for j, id := range order {
		next[j] = t.Blocks[idx[id]]
	}
	// A move changes no block: the digests move with their blocks, and the
	// order is in the Turn's hash.
	if len(t.sums) > 0 {
		sums := make([]blockSum, len(order))
		for j, id := range order {
			sums[j] = t.sumAt(idx[id])
		}
		t.sums = sums
	}
	t.Blocks = next
	t.pos = nil
	return nil
}

func split(t *Turn, p events.BlockSplit) error {
	i, err := t.need(p.BlockID)
	if err != nil {
		return err
	}
	idx := t.index()
	seen := map[string]bool{}
	for _, b := range p.Into {
		if _, taken := idx[b.ID]; (taken && b.ID != p.BlockID) || seen[b.ID] {
			return fmt.Errorf("%w: %s", ErrDuplicateBlock, b.ID)
		}
		seen[b.ID] = true
	}
	into := make([]Block, len(p.Into))
	for j, b := range p.Into {
		into[j] = own(b)
	}
	t.remove(map[string]bool{p.BlockID: true}, i, into)
	return nil
}

func compact(t *Turn, p events.TurnCompacted) error {
	drop, err := t.set("removed", p.Removed)
	if err != nil {
		return err
	}
	if p.Summary == nil {
		t.remove(drop, -1, nil)
		return nil
	}
	if _, taken := t.index()[p.Summary.ID]; taken && !drop[p.Summary.ID] {
		return fmt.Errorf("summary: %w: %s", ErrDuplicateBlock, p.Summary.ID)
	}
	at := len(t.Blocks)
	for _, id := range p.Removed {
		at = min(at, t.index()[id])
	}
	t.remove(drop, at, []Block{own(*p.Summary)})
	return nil
}

// cloneMeta copies an event's metadata for a block, so that the caller's
// map and the Turn's never alias. An empty map becomes nil: the wire form
// cannot tell the two apart, and the Turn a Tx builds from in-memory events
// must equal the one replay builds from decoded ones.
func cloneMeta(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// cloneSpans is cloneMeta for a block's untrusted spans.
func cloneSpans(s []events.Span) []events.Span {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// own is a block from an event (fork, split, summary) as the Turn keeps
// it: a deep copy, with empty metadata and spans as nil (see cloneMeta).
func own(b Block) Block {
	b.Meta = cloneMeta(b.Meta)
	b.Untrusted = cloneSpans(b.Untrusted)
	return b
}

// merge applies a metadata change without touching the original map, which
// a snapshot or a clone may share: an empty value deletes a key.
func merge(dst, change map[string]string) map[string]string {
	out := make(map[string]string, len(dst)+len(change))
	maps.Copy(out, dst)
	for k, v := range change {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
