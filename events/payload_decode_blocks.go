package events

// The payloads of model output and of block edits, decoded by hand (see
// payload_decode.go).

func decodeReasoningAppended(r *reader) (Payload, bool) {
	var p ReasoningAppended
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "text":
			ok = readString(r, &p.Text)
		case "enc":
			ok = readString(r, &p.Encrypted)
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

func decodeLLMTextAppended(r *reader) (Payload, bool) {
	var p LLMTextAppended
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "text":
			ok = readString(r, &p.Text)
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

func decodeToolCalled(r *reader) (Payload, bool) {
	var p ToolCalled
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "call_id":
			ok = readString(r, &p.CallID)
		case "name":
			ok = readString(r, &p.Name)
		case "args":
			ok = readString(r, &p.Arguments)
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

func decodeToolResult(r *reader) (Payload, bool) {
	var p ToolResult
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "call_id":
			ok = readString(r, &p.CallID)
		case "text":
			ok = readString(r, &p.Text)
		case "is_error":
			ok = readBool(r, &p.IsError)
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

func decodeBlocksReordered(r *reader) (Payload, bool) {
	var p BlocksReordered
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "order":
			ok = readStrings(r, &p.Order)
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

func decodeBlocksRemoved(r *reader) (Payload, bool) {
	var p BlocksRemoved
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_ids":
			ok = readStrings(r, &p.BlockIDs)
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

func decodeBlockAnnotated(r *reader) (Payload, bool) {
	var p BlockAnnotated
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "meta":
			ok = readStringMap(r, &p.Meta)
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

func decodeBlockSplit(r *reader) (Payload, bool) {
	var p BlockSplit
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "into":
			ok = readBlocks(r, &p.Into)
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

func decodeTurnCompacted(r *reader) (Payload, bool) {
	var p TurnCompacted
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "removed":
			ok = readStrings(r, &p.Removed)
		case "summary":
			ok = readBlockPointer(r, &p.Summary)
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
