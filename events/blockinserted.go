package events

// This file holds block.inserted: one block put at a position of the Turn,
// for a middleware that places context (a reminder, a retrieved document,
// a few-shot example) where the model must see it rather than at the end.
// Before it, the only way was to append and then reorder: two events for
// one change, and a Turn in between that no one meant.

// BlockInserted inserts Block at Index of the Turn: 0 is the front, the
// number of blocks the end. Only blocks a middleware may write go through
// it (user, llm_text, other): a system block is set with systemprompt.set,
// which keeps the conversation's one prompt; reasoning, tool calls and
// tool results are appended as the model and the tools produced them, and
// inserting one would forge what they said or separate it from its
// partner.
type BlockInserted struct {
	Index  int    `msgpack:"index" json:"index"`
	Block  Block  `msgpack:"block" json:"block"`
	Reason string `msgpack:"reason,omitempty" json:"reason,omitempty"`
}

// EventType implements Payload.
func (BlockInserted) EventType() Type { return TypeBlockInserted }

// Validate implements Payload.
func (p BlockInserted) Validate() error {
	if p.Index < 0 {
		return fieldErr("index", "is %d; use 0 for the front", p.Index)
	}
	if err := p.Block.Validate(); err != nil {
		return prefixed("block", err)
	}
	switch p.Block.Kind {
	case KindUser, KindLLMText, KindOther:
		return nil
	case KindSystem:
		return fieldErr("block.kind", "is system; set a system prompt with systemprompt.set")
	}
	return fieldErr("block.kind", "is %s, which only the model or a tool writes, at the end of the Turn; insert user, llm_text or other blocks", p.Block.Kind)
}

// appendBlockInserted writes p as msgpack's reflection does.
func appendBlockInserted(b []byte, p BlockInserted) []byte {
	b = appendMapLen(b, 2+present(p.Reason != ""))
	b = appendInt(appendString(b, "index"), int64(p.Index))
	b = appendBlock(appendString(b, "block"), &p.Block)
	if p.Reason != "" {
		b = appendField(b, "reason", p.Reason)
	}
	return b
}

func decodeBlockInserted(r *reader) (Payload, bool) {
	var p BlockInserted
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "index":
			ok = readInt(r, &p.Index)
		case "block":
			ok = readBlock(r, &p.Block)
		case "reason":
			ok = readString(r, &p.Reason)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}
