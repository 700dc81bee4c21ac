package events

// The payloads of model calls and of a request's end, decoded by hand (see
// payload_decode.go).

func decodeInferenceStarted(r *reader) (Payload, bool) {
	var p InferenceStarted
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "inference_id":
			ok = readString(r, &p.InferenceID)
		case "model":
			ok = readString(r, &p.Model)
		case "input_hash":
			ok = readString(r, &p.InputHash)
		case "sp_id":
			ok = readString(r, &p.SystemPromptID)
		case "sp_hash":
			ok = readString(r, &p.SystemPromptHash)
		case "blocks":
			ok = readInt(r, &p.Blocks)
		case "purpose":
			ok = readString(r, &p.Purpose)
		case "instructions":
			ok = readString(r, &p.Instructions)
		case "input_blocks":
			ok = readStrings(r, &p.InputBlocks)
		case "template_hash":
			ok = readString(r, &p.TemplateHash)
		case "untrusted":
			ok = readSpans(r, &p.Untrusted)
		case "gateway":
			ok = readStringMap(r, &p.Gateway)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeInferenceFinished(r *reader) (Payload, bool) {
	var p InferenceFinished
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "inference_id":
			ok = readString(r, &p.InferenceID)
		case "prompt_tokens":
			ok = readInt(r, &p.PromptTokens)
		case "completion_tokens":
			ok = readInt(r, &p.CompletionTokens)
		case "stop":
			ok = readString(r, &p.StopReason)
		case "duration":
			ok = readInt(r, &p.Duration)
		case "response_id":
			ok = readString(r, &p.ResponseID)
		case "other_choices":
			ok = readString(r, &p.OtherChoices)
		case "logprobs":
			ok = readString(r, &p.Logprobs)
		case "logprobs_omitted":
			ok = readInt(r, &p.LogprobsOmitted)
		case "wire_sha256":
			ok = readString(r, &p.SHA256)
		case "wire_version":
			ok = readString(r, &p.Version)
		case "wire_params":
			ok = readString(r, &p.Params)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeInferenceFailed(r *reader) (Payload, bool) {
	var p InferenceFailed
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "inference_id":
			ok = readString(r, &p.InferenceID)
		case "error":
			ok = readString(r, &p.Error)
		case "transient":
			ok = readBool(r, &p.Transient)
		case "duration":
			ok = readInt(r, &p.Duration)
		case "partial":
			ok = readBlocks(r, &p.Partial)
		case "wire_sha256":
			ok = readString(r, &p.SHA256)
		case "wire_version":
			ok = readString(r, &p.Version)
		case "wire_params":
			ok = readString(r, &p.Params)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeRequestCompleted(r *reader) (Payload, bool) {
	var p RequestCompleted
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "inferences":
			ok = readInt(r, &p.Inferences)
		case "profile":
			ok = readString(r, &p.Profile)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}

func decodeRequestFailed(r *reader) (Payload, bool) {
	var p RequestFailed
	n, ok := r.mapLen()
	for ; ok && n > 0; n-- {
		switch r.fieldKey() {
		case "reason":
			ok = readString(r, &p.Reason)
		case "taken_over":
			ok = readBool(r, &p.TakenOver)
		case "profile":
			ok = readString(r, &p.Profile)
		default:
			ok = false
		}
	}
	if !ok {
		return nil, false
	}
	return p, true
}
