package calls

import (
	"fmt"
	"slices"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// PlanInput returns the events of a call's first step, its input, and
// applies them to turn, which the caller owns: a conversation.started
// when the conversation has no events; what the call changes in the Turn
// (see below); the parameters the conversation's data lacks; and
// inference.started. After them, the Turn renders exactly to the call's
// input hash (checked before returning: an error means the call cannot be
// recorded as parsed, and the caller records it as unparsed with the
// reason).
//
// The call's input is compared with the Turn by the blocks' content (kind,
// text, tool call, encrypted reasoning): blocks the Turn holds are not
// stored again; new ones are appended with the events a worker's would be
// (user.appended, systemprompt.set, tool.result, ...); a system prompt
// that differs from the Turn's active one replaces it (systemprompt.replaced);
// blocks the call left out are removed (blocks.removed); blocks the call
// sends in another order are reordered (blocks.reordered); an item the
// client writes otherwise than the Turn renders it is annotated
// (block.annotated of MetaItem). A call continuing a stored response
// (Responses' previous_response_id) sends only its new items: they are
// appended, and inference.started names them (InputBlocks), since the
// rest of its input is on the provider's side.
func PlanInput(turn *projector.Turn, c *Call) ([]events.Event, error) {
	if c.ID == "" {
		c.ID = ulid.Make().String()
	}
	conv := turn.Conversation
	if c.Request != nil && turn.Events == 0 && c.Fork == nil {
		// A new conversation's Turn gets its blocks at once, not by
		// doubling its slice a block at a time.
		turn.Blocks = slices.Grow(turn.Blocks, c.Request.blockCount()+2)
	}
	var evs []events.Event
	emit := func(step int, p events.Payload) error {
		e := c.event(conv, step, p)
		if err := projector.Apply(turn, e); err != nil {
			return fmt.Errorf("record call %s: %w", c.ID, err)
		}
		if c.Observe != nil {
			c.Observe(e, turn)
		}
		evs = append(evs, e)
		return nil
	}
	if turn.Events == 0 {
		start := events.ConversationStarted{}
		if c.Fork != nil {
			start = events.ConversationStarted{ForkedFrom: c.Fork.From, ForkedAt: c.Fork.At, Blocks: c.Fork.Blocks, Data: c.Fork.Data}
		}
		if err := emit(0, start); err != nil {
			return nil, err
		}
	}
	gw := map[string]string{"wire_sha256": c.Wire, "threading": c.Threading}
	if c.Import != "" {
		gw["source"], gw["import"] = SourceImport, c.Import
	}
	if c.Instance != "" {
		gw["instance"] = c.Instance
	}
	for k, v := range c.Headers {
		gw[MetaHeaderPrefix+k] = v
	}
	if c.Request == nil {
		gw["unparsed"] = c.Unparsed
		if c.API != "" {
			gw["api"] = string(c.API)
		}
		err := emit(0, events.InferenceStarted{InferenceID: c.ID, InputHash: "sha256:" + c.Wire, Gateway: gw,
			Blocks: len(turn.Blocks)})
		return evs, err
	}
	req := c.Request
	gw["api"], gw["params"] = string(req.API), req.Params.Hash
	if req.Scope != "" {
		gw[MetaScope] = req.Scope
	}
	if req.PreviousResponseID != "" {
		gw["previous_response_id"] = req.PreviousResponseID
	}
	if req.ProviderConversation != "" {
		gw["provider_conversation"] = req.ProviderConversation
	}
	if c.Compact {
		gw["compact"] = "true"
	}
	var inputIDs []string
	var err error
	if req.Continues() {
		inputIDs, c.appended, err = planAppended(turn, req, c, emit)
	} else {
		err = planFull(turn, req, c, emit)
	}
	if err != nil {
		return nil, err
	}
	if vals := req.Params.DataValues(turn.Data); vals != nil {
		if err := emit(0, events.DataSet{Values: vals}); err != nil {
			return nil, err
		}
	}
	blocks := turn.Blocks
	if inputIDs != nil {
		blocks = make([]events.Block, len(inputIDs))
		for i, id := range inputIDs {
			blocks[i], _ = turn.Block(id)
		}
	}
	if err := checkRender(req, blocks, turn.Data); err != nil {
		return nil, err
	}
	st := events.InferenceStarted{InferenceID: c.ID, Model: req.Model, InputHash: req.InputHash,
		Blocks: len(blocks), InputBlocks: inputIDs, Gateway: gw}
	if sp, ok := ActivePrompt(turn, blocks, inputIDs != nil); ok {
		st.SystemPromptID, st.SystemPromptHash = sp.ID, projector.HashText(sp.Text)
	}
	return evs, emit(0, st)
}

// reqBlock is one block of the request with its item.
type reqBlock struct {
	b    *events.Block // in item.Blocks
	item *Item
	at   int // index in the item
}

func flatten(req *Request) []reqBlock {
	out := make([]reqBlock, 0, req.blockCount())
	for i := range req.Items {
		it := &req.Items[i]
		for j := range it.Blocks {
			out = append(out, reqBlock{b: &it.Blocks[j], item: it, at: j})
		}
	}
	return out
}

// planFull records a call that sends its whole input.
func planFull(turn *projector.Turn, req *Request, c *Call, emit func(int, events.Payload) error) error {
	rbs := flatten(req)
	rkeys := req.RequestKeys()
	assign := make([]int, len(rbs))
	used := make([]bool, len(turn.Blocks))
	// The common case first: the call re-sends the Turn's blocks in the
	// Turn's order, compared in place without hashing the Turn.
	same := 0
	for same < len(rbs) && same < len(turn.Blocks) && sameContent(&turn.Blocks[same], rbs[same].b) && SameThought(&turn.Blocks[same], rbs[same].b) {
		assign[same], used[same] = same, true
		same++
	}
	queues := map[[32]byte][]int{}
	for i := same; i < len(turn.Blocks); i++ {
		k := Key(&turn.Blocks[i])
		queues[k] = append(queues[k], i)
		if d, ok := DoublesKey(&turn.Blocks[i]); ok {
			// The model's call as an app that reads its numbers as
			// doubles sends it back (doublesKey).
			queues[d] = append(queues[d], i)
		}
	}
	for i := same; i < len(rbs); i++ {
		assign[i] = -1
		k := rkeys[i]
		q := queues[k]
		for len(q) > 0 && used[q[0]] {
			q = q[1:] // matched by its other key
		}
		// The model's answer sent back with other thinking is not the
		// model's (SameThought): it stays unmatched.
		if len(q) > 0 && SameThought(&turn.Blocks[q[0]], rbs[i].b) {
			assign[i], q = q[0], q[1:]
			used[assign[i]] = true
		}
		queues[k] = q
	}
	ids := make([]string, len(rbs))
	for i, a := range assign {
		if a >= 0 {
			ids[i] = turn.Blocks[a].ID
		}
	}
	// A system prompt other than the Turn's active one replaces it.
	if sp, s, ok := turn.SystemPrompt(); ok && !used[s] {
		for i := range rbs {
			if assign[i] < 0 && rbs[i].b.Kind == events.KindSystem {
				meta := metaDiff(sp.Meta, rbs[i].b.Meta)
				if err := emit(0, events.SystemPromptReplaced{BlockID: sp.ID, Text: rbs[i].b.Text, Previous: sp.Text, Meta: meta,
					PreviousSource: sp.Meta[events.MetaSystemPromptSource],
					Reason:         "the call's system prompt differs from the one the conversation had"}); err != nil {
					return err
				}
				assign[i], used[s], ids[i] = s, true, sp.ID
				break
			}
		}
	}
	var drop []string
	for i, u := range used {
		if !u {
			drop = append(drop, turn.Blocks[i].ID)
		}
	}
	if len(drop) > 0 {
		if err := emit(0, events.BlocksRemoved{BlockIDs: drop, Reason: "absent from the call's input"}); err != nil {
			return err
		}
	}
	for i := range rbs {
		if ids[i] == "" {
			continue
		}
		// Where the block is: where it was matched, unless blocks were
		// removed before it (a replaced system prompt keeps its place).
		at := assign[i]
		if len(drop) > 0 {
			at = turn.Index(ids[i])
		}
		if err := annotateSent(&turn.Blocks[at], rbs[i], emit); err != nil {
			return err
		}
	}
	for i := range rbs {
		if ids[i] != "" {
			continue
		}
		ids[i] = ulid.Make().String()
		at := len(turn.Blocks)
		if rbs[i].b.Kind == events.KindSystem {
			// A system block sent among the others is set where it was
			// sent, after the block sent before it: set at the end, the
			// reorder that then put it in place read as the app moving
			// its history. (Only a system prompt's event takes an index.)
			at = 0
			if i > 0 {
				at = turn.Index(ids[i-1]) + 1
			}
		}
		if err := emit(0, appendPayload(ids[i], rbs[i].b, at)); err != nil {
			return err
		}
	}
	if !slices.EqualFunc(turn.Blocks, ids, func(b events.Block, id string) bool { return b.ID == id }) {
		return emit(0, events.BlocksReordered{Order: ids, Reason: "the call sends its input in this order"})
	}
	return nil
}

// planAppended records a call that continues a stored response: its items
// are new, but for instructions equal to the active system prompt (when
// that prompt is a call's instructions, not a message of the provider's
// history) and the blocks its conversation holds after that response when
// the call sends them again (Call.ResentFrom).
func planAppended(turn *projector.Turn, req *Request, c *Call, emit func(int, events.Payload) error) (ids, added []string, err error) {
	rbs := flatten(req)
	ids = make([]string, 0, len(rbs))
	resent, leftOut := resentIDs(turn, rbs, c.ResentFrom)
	if len(leftOut) > 0 {
		// The items after the response are sent again without this
		// reasoning: the history the model reads has none of it.
		if err := emit(0, events.BlocksRemoved{BlockIDs: leftOut, Reason: "left out of the items the call sends again after the response it continues"}); err != nil {
			return nil, nil, err
		}
	}
	for i := range rbs {
		b := rbs[i].b
		if id, ok := resent[i]; ok {
			// Sent again: the provider holds it once, in the history the
			// call continues.
			if err := annotateSent(&turn.Blocks[turn.Index(id)], rbs[i], emit); err != nil {
				return nil, nil, err
			}
			ids = append(ids, id)
			continue
		}
		instructions := rbs[i].item.Field != "" && b.Kind == events.KindSystem
		if instructions {
			// A call's instructions take the place of the ones an
			// earlier call sent; a system or developer message of the
			// provider's history stays, and they go before it.
			if sp, _, ok := turn.SystemPrompt(); ok && sp.Meta[MetaField] != "" {
				if sp.Text != b.Text {
					if err := emit(0, events.SystemPromptReplaced{BlockID: sp.ID, Text: b.Text, Previous: sp.Text, Meta: metaDiff(sp.Meta, b.Meta),
						Reason: "the call's instructions differ from the conversation's system prompt"}); err != nil {
						return nil, nil, err
					}
				} else if d := metaDiff(sp.Meta, b.Meta); len(d) > 0 {
					if err := emit(0, events.BlockAnnotated{BlockID: sp.ID, Meta: d, Reason: "the client writes this item otherwise"}); err != nil {
						return nil, nil, err
					}
				}
				ids = append(ids, sp.ID)
				continue
			}
		}
		id := ulid.Make().String()
		index := len(turn.Blocks)
		if b.Kind == events.KindSystem {
			if _, _, ok := turn.SystemPrompt(); !ok || instructions {
				index = 0
			}
		}
		if err := emit(0, appendPayload(id, b, index)); err != nil {
			return nil, nil, err
		}
		ids, added = append(ids, id), append(added, id)
	}
	return ids, added, nil
}

// appendPayload is the event that adds b as block id (a system block at
// index).
func appendPayload(id string, b *events.Block, index int) events.Payload {
	switch b.Kind {
	case events.KindSystem:
		return events.SystemPromptSet{BlockID: id, Text: b.Text, Index: index, Trust: events.Trusted, Meta: b.Meta}
	case events.KindReasoning:
		return events.ReasoningAppended{BlockID: id, Text: b.Text, Encrypted: b.Encrypted, Meta: b.Meta}
	case events.KindLLMText:
		return events.LLMTextAppended{BlockID: id, Text: b.Text, Meta: b.Meta}
	case events.KindToolCall:
		return events.ToolCalled{BlockID: id, CallID: b.CallID, Name: b.ToolName, Arguments: b.Arguments, Meta: b.Meta}
	case events.KindToolResult:
		return events.ToolResult{BlockID: id, CallID: b.CallID, Text: b.Text, IsError: b.IsError, Meta: b.Meta}
	}
	return events.UserAppended{BlockID: id, Text: b.Text, Meta: b.Meta}
}
