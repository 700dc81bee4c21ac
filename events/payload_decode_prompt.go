package events

// The system prompt's payloads, decoded by hand (see payload_decode.go).

func decodeSystemPromptSet(r *reader) (Payload, bool) {
	var p SystemPromptSet
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "text":
			ok = readString(r, &p.Text)
		case "index":
			ok = readInt(r, &p.Index)
		case "trust":
			ok = readString(r, &p.Trust)
		case "meta":
			ok = readStringMap(r, &p.Meta)
		case "template_hash":
			ok = readString(r, &p.TemplateHash)
		case "vars":
			ok = readStringMap(r, &p.Variables)
		case "untrusted":
			ok = readSpans(r, &p.Untrusted)
		case "template":
			ok = readString(r, &p.Template)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeSystemPromptReplaced(r *reader) (Payload, bool) {
	var p SystemPromptReplaced
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "text":
			ok = readString(r, &p.Text)
		case "previous":
			ok = readString(r, &p.Previous)
		case "meta":
			ok = readStringMap(r, &p.Meta)
		case "template_hash":
			ok = readString(r, &p.TemplateHash)
		case "vars":
			ok = readStringMap(r, &p.Variables)
		case "reason":
			ok = readString(r, &p.Reason)
		case "prev_source":
			ok = readString(r, &p.PreviousSource)
		case "untrusted":
			ok = readSpans(r, &p.Untrusted)
		case "template":
			ok = readString(r, &p.Template)
		case "prev_template_hash":
			ok = readString(r, &p.PreviousTemplateHash)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeSystemPromptLocked(r *reader) (Payload, bool) {
	p, ok := readLockChange(r)
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeSystemPromptUnlocked(r *reader) (Payload, bool) {
	p, ok := readLockChange(r)
	if !ok {
		return nil, false
	}
	return SystemPromptUnlocked(p), true // the same fields and keys
}

// readLockChange reads the fields SystemPromptLocked and
// SystemPromptUnlocked share.
func readLockChange(r *reader) (SystemPromptLocked, bool) {
	var p SystemPromptLocked
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "block_id":
			ok = readString(r, &p.BlockID)
		case "reason":
			ok = readString(r, &p.Reason)
		default:
			ok = false
		}
	}
	return p, ok
}
