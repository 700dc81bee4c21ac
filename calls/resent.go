package calls

import (
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// annotateSent records how a call writes a block the Turn holds already
// (matched by content): a block.annotated of the gateway keys its item
// wants, when they differ from the block's, so that the block renders as
// this call sent it.
func annotateSent(b *events.Block, rb reqBlock, emit func(int, events.Payload) error) error {
	// The request's block carries the gateway keys its item wants
	// (Item.mark); Key equal, so is its gateway.type.
	d := metaDiff(b.Meta, rb.b.Meta)
	if b.Arguments != rb.b.Arguments && rb.at == 0 && rb.item.Canon != nil && b.Meta[MetaItem] != string(rb.item.Canon) {
		// The same arguments as JSON, written otherwise (argumentsKey):
		// the block renders as this call wrote its item.
		if d == nil {
			d = map[string]string{}
		}
		d[MetaItem] = string(rb.item.Canon)
	}
	if len(d) == 0 {
		return nil
	}
	reason := "the client writes this item otherwise"
	if rb.at == 0 && rb.item.sentAsReference() {
		reason = "the client sends this item back by reference (item_reference): the provider reads its stored copy"
	}
	return emit(0, events.BlockAnnotated{BlockID: b.ID, Meta: d, Reason: reason})
}

// Resends reports whether req, a call continuing a stored response at
// which turn held its first from blocks, sends again at the head of its
// input the blocks turn holds after them (see Call.ResentFrom).
func Resends(turn *projector.Turn, req *Request, from int) bool {
	ids, _ := resentIDs(turn, flatten(req), from)
	return ids != nil
}

// resentIDs returns, for a call continuing a stored response that sends
// again, at the head of its input, the blocks its conversation holds after
// that response (Call.ResentFrom), the ID of the Turn's block each of those
// request blocks is, by the request block's index, and the
// reasoning blocks it left out (the Vercel AI SDK sends a chained step's
// items back without their reasoning: the model does not read it); nil
// when the call's input does not begin with them (the Turn changed since
// the call was threaded), and its items are then all new. A call's
// instructions are not items of the history and are skipped.
func resentIDs(turn *projector.Turn, rbs []reqBlock, from int) (ids map[int]string, leftOut []string) {
	if from <= 0 || from >= len(turn.Blocks) {
		return nil, nil
	}
	ids = make(map[int]string, len(turn.Blocks)-from)
	j := from
	for i := 0; i < len(rbs) && j < len(turn.Blocks); i++ {
		if rbs[i].item.Field != "" {
			continue
		}
		for j < len(turn.Blocks) && turn.Blocks[j].Kind == events.KindReasoning && Key(&turn.Blocks[j]) != Key(rbs[i].b) {
			leftOut = append(leftOut, turn.Blocks[j].ID)
			j++
		}
		if j == len(turn.Blocks) || Key(&turn.Blocks[j]) != Key(rbs[i].b) {
			return nil, nil
		}
		ids[i] = turn.Blocks[j].ID
		j++
	}
	if j < len(turn.Blocks) {
		return nil, nil
	}
	return ids, leftOut
}
