package events

// The catalog's payloads, decoded by hand: one function per type, one case
// per msgpack key. A field added to a payload (or to Block) needs its case
// here, as it needs its line in appendPayload: a key without a case sends
// every message that carries it to the reflection decoder, and
// TestDecodeMatchesReflection fails, naming the type and the key.
//
// What these must do to decode as msgpack's reflection does:
//   - a map's keys come in any order; a key without a case gives up
//     (reflection would skip it: an old or foreign message, left to it);
//   - a key given twice: the last value wins, as in reflection, for
//     strings, ints and bools; a map, slice or pointer given twice gives
//     up (reflection merges the second into the first), which the readers
//     of msgpack_reader.go do by themselves;
//   - an empty map or array gives an empty, non-nil map or slice, and nil
//     gives nil; canonical (codec.go) then makes them what Decode returns.

// decodeHand decodes a payload of like's type by hand. known is false when
// like is not a catalog type (a program's own, a pointer), which the
// registry then decodes by reflection; ok is false when the value is not
// in a form the decoder knows. A switch rather than a function per
// registry entry: a call through a function value would move the reader
// of every message to the heap.
func decodeHand(like Payload, r *reader) (p Payload, ok, known bool) {
	switch like.(type) {
	case ConversationStarted:
		p, ok = decodeConversationStarted(r)
	case UserAppended:
		p, ok = decodeUserAppended(r)
	case SystemPromptSet:
		p, ok = decodeSystemPromptSet(r)
	case SystemPromptReplaced:
		p, ok = decodeSystemPromptReplaced(r)
	case SystemPromptLocked:
		p, ok = decodeSystemPromptLocked(r)
	case SystemPromptUnlocked:
		p, ok = decodeSystemPromptUnlocked(r)
	case MessageRemoved:
		p, ok = decodeMessageRemoved(r)
	case FindingRecorded:
		p, ok = decodeFindingRecorded(r)
	case ReasoningAppended:
		p, ok = decodeReasoningAppended(r)
	case LLMTextAppended:
		p, ok = decodeLLMTextAppended(r)
	case ToolCalled:
		p, ok = decodeToolCalled(r)
	case ToolResult:
		p, ok = decodeToolResult(r)
	case BlocksReordered:
		p, ok = decodeBlocksReordered(r)
	case BlocksRemoved:
		p, ok = decodeBlocksRemoved(r)
	case BlockAnnotated:
		p, ok = decodeBlockAnnotated(r)
	case BlockSplit:
		p, ok = decodeBlockSplit(r)
	case BlockInserted:
		p, ok = decodeBlockInserted(r)
	case TurnCompacted:
		p, ok = decodeTurnCompacted(r)
	case DataSet:
		p, ok = decodeDataSet(r)
	case InferenceStarted:
		p, ok = decodeInferenceStarted(r)
	case InferenceFinished:
		p, ok = decodeInferenceFinished(r)
	case InferenceFailed:
		p, ok = decodeInferenceFailed(r)
	case RequestCompleted:
		p, ok = decodeRequestCompleted(r)
	case RequestFailed:
		p, ok = decodeRequestFailed(r)
	default:
		return nil, false, false
	}
	return p, ok, true
}

// fieldKey reads a map key; "" when it is not a string, which no case
// matches.
func (r *reader) fieldKey() string {
	s, _ := r.str()
	return s
}

// readBlock reads a Block into b (in a slice, or behind a pointer).
func readBlock(r *reader, b *Block) bool {
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "id":
			ok = readString(r, &b.ID)
		case "kind":
			ok = readString(r, &b.Kind)
		case "text":
			ok = readString(r, &b.Text)
		case "trust":
			ok = readString(r, &b.Trust)
		case "meta":
			ok = readStringMap(r, &b.Meta)
		case "call_id":
			ok = readString(r, &b.CallID)
		case "tool":
			ok = readString(r, &b.ToolName)
		case "args":
			ok = readString(r, &b.Arguments)
		case "is_error":
			ok = readBool(r, &b.IsError)
		case "enc":
			ok = readString(r, &b.Encrypted)
		case "untrusted":
			ok = readSpans(r, &b.Untrusted)
		default:
			ok = false
		}
	}
	return ok
}

// readSpan reads a Span into sp.
func readSpan(r *reader, sp *Span) bool {
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "start":
			ok = readInt(r, &sp.Start)
		case "end":
			ok = readInt(r, &sp.End)
		case "var":
			ok = readString(r, &sp.Var)
		default:
			ok = false
		}
	}
	return ok
}

func decodeConversationStarted(r *reader) (Payload, bool) {
	var p ConversationStarted
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "profile":
			ok = readString(r, &p.Profile)
		case "forked_from":
			ok = readString(r, &p.ForkedFrom)
		case "forked_at":
			ok = readInt(r, &p.ForkedAt)
		case "blocks":
			ok = readBlocks(r, &p.Blocks)
		case "data":
			ok = readStringMap(r, &p.Data)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeUserAppended(r *reader) (Payload, bool) {
	var p UserAppended
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "text":
			ok = readString(r, &p.Text)
		case "trust":
			ok = readString(r, &p.Trust)
		case "meta":
			ok = readStringMap(r, &p.Meta)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeMessageRemoved(r *reader) (Payload, bool) {
	var p MessageRemoved
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "seq":
			ok = readInt(r, &p.Seq)
		case "size":
			ok = readInt(r, &p.Size)
		case "sha256":
			ok = readString(r, &p.SHA256)
		case "headers":
			ok = readStringMap(r, &p.Headers)
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

func decodeDataSet(r *reader) (Payload, bool) {
	var p DataSet
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "values":
			ok = readStringMap(r, &p.Values)
		case "unset":
			ok = readStrings(r, &p.Unset)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeFindingRecorded(r *reader) (Payload, bool) {
	var p FindingRecorded
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "inference_id":
			ok = readString(r, &p.InferenceID)
		case "rule":
			ok = readString(r, &p.Rule)
		case "detail":
			ok = readString(r, &p.Detail)
		case "blocks":
			ok = readStrings(r, &p.Blocks)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}
