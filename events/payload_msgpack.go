package events

// appendPayload appends the catalog's payloads the way msgpack v5.4.1's
// reflection encodes them, and reports false for any other payload (a
// type registered by a program of its own, or a pointer), which Encode
// leaves to reflection. As for the envelope (see envelope.go), the bytes
// must not change: TestEncodeMatchesReflection holds them to reflection's.
//
// What reflection writes for a payload struct, and so what these write:
//   - a map of the fields that are not omitted, in field order, keyed by
//     their msgpack tag; omitempty omits "", 0, false, a nil pointer and a
//     map or slice of length 0;
//   - strings and string types (Kind, Trust): the shortest str header;
//   - ints: the shortest integer form (EncodeInt);
//   - time.Duration, an int64 type: always int 64, 9 bytes (msgpack only
//     shortens int64s with UseCompactInts, which Encode does not set);
//   - bools: true or false;
//   - a nil map or slice: nil; a map[string]string: its entries sorted
//     by key (reflection's order is Go's random map order; sorted is one
//     of its orders, chosen so that equal events give equal bytes);
//   - a Block, in a slice or behind a pointer, and a Span in a slice: as a
//     struct, the same way.
func appendPayload(b []byte, p Payload) ([]byte, bool) {
	switch p := p.(type) {
	case ConversationStarted:
		b = appendMapLen(b, 0+
			present(p.Profile != "")+
			present(p.ForkedFrom != "")+
			present(p.ForkedAt != 0)+
			present(len(p.Blocks) != 0)+
			present(len(p.Data) != 0))
		if p.Profile != "" {
			b = appendField(b, "profile", p.Profile)
		}
		if p.ForkedFrom != "" {
			b = appendField(b, "forked_from", p.ForkedFrom)
		}
		if p.ForkedAt != 0 {
			b = appendInt(appendString(b, "forked_at"), int64(p.ForkedAt))
		}
		if len(p.Blocks) != 0 {
			b = appendBlocks(appendString(b, "blocks"), p.Blocks)
		}
		if len(p.Data) != 0 {
			b = appendStringMap(appendString(b, "data"), p.Data)
		}
	case UserAppended:
		b = appendMapLen(b, 2+
			present(p.Trust != "")+
			present(len(p.Meta) != 0))
		b = appendField(b, "block_id", p.BlockID)
		b = appendField(b, "text", p.Text)
		if p.Trust != "" {
			b = appendField(b, "trust", string(p.Trust))
		}
		if len(p.Meta) != 0 {
			b = appendStringMap(appendString(b, "meta"), p.Meta)
		}
	case SystemPromptSet:
		b = appendMapLen(b, 2+
			present(p.Index != 0)+
			present(p.Trust != "")+
			present(len(p.Meta) != 0)+
			present(p.TemplateHash != "")+
			present(len(p.Variables) != 0)+
			present(len(p.Untrusted) != 0)+
			present(p.Template != ""))
		b = appendField(b, "block_id", p.BlockID)
		b = appendField(b, "text", p.Text)
		if p.Index != 0 {
			b = appendInt(appendString(b, "index"), int64(p.Index))
		}
		if p.Trust != "" {
			b = appendField(b, "trust", string(p.Trust))
		}
		if len(p.Meta) != 0 {
			b = appendStringMap(appendString(b, "meta"), p.Meta)
		}
		if p.TemplateHash != "" {
			b = appendField(b, "template_hash", p.TemplateHash)
		}
		if len(p.Variables) != 0 {
			b = appendStringMap(appendString(b, "vars"), p.Variables)
		}
		if len(p.Untrusted) != 0 {
			b = appendSpans(appendString(b, "untrusted"), p.Untrusted)
		}
		if p.Template != "" {
			b = appendField(b, "template", p.Template)
		}
	case SystemPromptReplaced:
		b = appendMapLen(b, 3+
			present(len(p.Meta) != 0)+
			present(p.TemplateHash != "")+
			present(len(p.Variables) != 0)+
			present(p.Reason != "")+
			present(p.PreviousSource != "")+
			present(len(p.Untrusted) != 0)+
			present(p.Template != "")+
			present(p.PreviousTemplateHash != ""))
		b = appendField(b, "block_id", p.BlockID)
		b = appendField(b, "text", p.Text)
		b = appendField(b, "previous", p.Previous)
		if len(p.Meta) != 0 {
			b = appendStringMap(appendString(b, "meta"), p.Meta)
		}
		if p.TemplateHash != "" {
			b = appendField(b, "template_hash", p.TemplateHash)
		}
		if len(p.Variables) != 0 {
			b = appendStringMap(appendString(b, "vars"), p.Variables)
		}
		if p.Reason != "" {
			b = appendField(b, "reason", p.Reason)
		}
		if p.PreviousSource != "" {
			b = appendField(b, "prev_source", p.PreviousSource)
		}
		if len(p.Untrusted) != 0 {
			b = appendSpans(appendString(b, "untrusted"), p.Untrusted)
		}
		if p.Template != "" {
			b = appendField(b, "template", p.Template)
		}
		if p.PreviousTemplateHash != "" {
			b = appendField(b, "prev_template_hash", p.PreviousTemplateHash)
		}
	case SystemPromptLocked:
		b = appendLockChange(b, p)
	case SystemPromptUnlocked:
		b = appendLockChange(b, SystemPromptLocked(p)) // the same fields
	case ReasoningAppended:
		b = appendMapLen(b, 1+
			present(p.Text != "")+
			present(p.Encrypted != "")+
			present(len(p.Meta) != 0))
		b = appendField(b, "block_id", p.BlockID)
		if p.Text != "" {
			b = appendField(b, "text", p.Text)
		}
		if p.Encrypted != "" {
			b = appendField(b, "enc", p.Encrypted)
		}
		if len(p.Meta) != 0 {
			b = appendStringMap(appendString(b, "meta"), p.Meta)
		}
	case LLMTextAppended:
		b = appendMapLen(b, 2+present(len(p.Meta) != 0))
		b = appendField(b, "block_id", p.BlockID)
		b = appendField(b, "text", p.Text)
		if len(p.Meta) != 0 {
			b = appendStringMap(appendString(b, "meta"), p.Meta)
		}
	case ToolCalled:
		b = appendMapLen(b, 3+
			present(p.Arguments != "")+
			present(len(p.Meta) != 0))
		b = appendField(b, "block_id", p.BlockID)
		b = appendField(b, "call_id", p.CallID)
		b = appendField(b, "name", p.Name)
		if p.Arguments != "" {
			b = appendField(b, "args", p.Arguments)
		}
		if len(p.Meta) != 0 {
			b = appendStringMap(appendString(b, "meta"), p.Meta)
		}
	case ToolResult:
		b = appendMapLen(b, 3+
			present(p.IsError)+
			present(len(p.Meta) != 0))
		b = appendField(b, "block_id", p.BlockID)
		b = appendField(b, "call_id", p.CallID)
		b = appendField(b, "text", p.Text)
		if p.IsError {
			b = append(appendString(b, "is_error"), 0xc3)
		}
		if len(p.Meta) != 0 {
			b = appendStringMap(appendString(b, "meta"), p.Meta)
		}
	case BlocksReordered:
		b = appendMapLen(b, 1+present(p.Reason != ""))
		b = appendStrings(appendString(b, "order"), p.Order)
		if p.Reason != "" {
			b = appendField(b, "reason", p.Reason)
		}
	case BlocksRemoved:
		b = appendMapLen(b, 2)
		b = appendStrings(appendString(b, "block_ids"), p.BlockIDs)
		b = appendField(b, "reason", p.Reason)
	case BlockAnnotated:
		b = appendMapLen(b, 2+present(p.Reason != ""))
		b = appendField(b, "block_id", p.BlockID)
		b = appendStringMap(appendString(b, "meta"), p.Meta)
		if p.Reason != "" {
			b = appendField(b, "reason", p.Reason)
		}
	case BlockSplit:
		b = appendMapLen(b, 2+present(p.Reason != ""))
		b = appendField(b, "block_id", p.BlockID)
		b = appendBlocks(appendString(b, "into"), p.Into)
		if p.Reason != "" {
			b = appendField(b, "reason", p.Reason)
		}
	case BlockInserted:
		b = appendBlockInserted(b, p)
	case TurnCompacted:
		b = appendMapLen(b, 1+
			present(p.Summary != nil)+
			present(p.Reason != ""))
		b = appendStrings(appendString(b, "removed"), p.Removed)
		if p.Summary != nil {
			b = appendBlock(appendString(b, "summary"), p.Summary)
		}
		if p.Reason != "" {
			b = appendField(b, "reason", p.Reason)
		}
	case DataSet:
		b = appendMapLen(b, 0+
			present(len(p.Values) != 0)+
			present(len(p.Unset) != 0))
		if len(p.Values) != 0 {
			b = appendStringMap(appendString(b, "values"), p.Values)
		}
		if len(p.Unset) != 0 {
			b = appendStrings(appendString(b, "unset"), p.Unset)
		}
	case InferenceStarted:
		b = appendMapLen(b, 4+
			present(p.SystemPromptID != "")+
			present(p.SystemPromptHash != "")+
			present(p.Purpose != "")+
			present(p.Instructions != "")+
			present(len(p.InputBlocks) != 0)+
			present(p.TemplateHash != "")+
			present(len(p.Untrusted) != 0)+
			present(len(p.Gateway) != 0))
		b = appendField(b, "inference_id", p.InferenceID)
		b = appendField(b, "model", p.Model)
		b = appendField(b, "input_hash", p.InputHash)
		if p.SystemPromptID != "" {
			b = appendField(b, "sp_id", p.SystemPromptID)
		}
		if p.SystemPromptHash != "" {
			b = appendField(b, "sp_hash", p.SystemPromptHash)
		}
		b = appendInt(appendString(b, "blocks"), int64(p.Blocks))
		if p.Purpose != "" {
			b = appendField(b, "purpose", p.Purpose)
		}
		if p.Instructions != "" {
			b = appendField(b, "instructions", p.Instructions)
		}
		if len(p.InputBlocks) != 0 {
			b = appendStrings(appendString(b, "input_blocks"), p.InputBlocks)
		}
		if p.TemplateHash != "" {
			b = appendField(b, "template_hash", p.TemplateHash)
		}
		if len(p.Untrusted) != 0 {
			b = appendSpans(appendString(b, "untrusted"), p.Untrusted)
		}
		if len(p.Gateway) != 0 {
			b = appendStringMap(appendString(b, "gateway"), p.Gateway)
		}
	case InferenceFinished:
		b = appendMapLen(b, 2+
			present(p.PromptTokens != 0)+
			present(p.CompletionTokens != 0)+
			present(p.StopReason != "")+
			present(p.ResponseID != "")+
			present(p.OtherChoices != "")+
			present(p.Logprobs != "")+
			present(p.LogprobsOmitted != 0)+
			wireFields(p.Wire))
		b = appendField(b, "inference_id", p.InferenceID)
		if p.PromptTokens != 0 {
			b = appendInt(appendString(b, "prompt_tokens"), int64(p.PromptTokens))
		}
		if p.CompletionTokens != 0 {
			b = appendInt(appendString(b, "completion_tokens"), int64(p.CompletionTokens))
		}
		if p.StopReason != "" {
			b = appendField(b, "stop", p.StopReason)
		}
		b = appendInt64(appendString(b, "duration"), int64(p.Duration))
		if p.ResponseID != "" {
			b = appendField(b, "response_id", p.ResponseID)
		}
		if p.OtherChoices != "" {
			b = appendField(b, "other_choices", p.OtherChoices)
		}
		if p.Logprobs != "" {
			b = appendField(b, "logprobs", p.Logprobs)
		}
		if p.LogprobsOmitted != 0 {
			b = appendInt(appendString(b, "logprobs_omitted"), int64(p.LogprobsOmitted))
		}
		b = appendWire(b, p.Wire)
	case InferenceFailed:
		b = appendMapLen(b, 3+present(p.Transient)+present(len(p.Partial) != 0)+wireFields(p.Wire))
		b = appendField(b, "inference_id", p.InferenceID)
		b = appendField(b, "error", p.Error)
		if p.Transient {
			b = append(appendString(b, "transient"), 0xc3)
		}
		b = appendInt64(appendString(b, "duration"), int64(p.Duration))
		if len(p.Partial) != 0 {
			b = appendBlocks(appendString(b, "partial"), p.Partial)
		}
		b = appendWire(b, p.Wire)
	case RequestCompleted:
		b = appendMapLen(b, present(p.Inferences != 0)+present(p.Profile != ""))
		if p.Inferences != 0 {
			b = appendInt(appendString(b, "inferences"), int64(p.Inferences))
		}
		if p.Profile != "" {
			b = appendField(b, "profile", p.Profile)
		}
	case RequestFailed:
		b = appendMapLen(b, 1+present(p.TakenOver)+present(p.Profile != ""))
		b = appendField(b, "reason", p.Reason)
		if p.TakenOver {
			b = append(appendString(b, "taken_over"), 0xc3)
		}
		if p.Profile != "" {
			b = appendField(b, "profile", p.Profile)
		}
	case MessageRemoved:
		b = appendMapLen(b, 4+present(len(p.Headers) != 0))
		b = appendInt(appendString(b, "seq"), int64(p.Seq))
		b = appendInt(appendString(b, "size"), int64(p.Size))
		b = appendField(b, "sha256", p.SHA256)
		if len(p.Headers) != 0 {
			b = appendStringMap(appendString(b, "headers"), p.Headers)
		}
		b = appendField(b, "reason", p.Reason)
	case FindingRecorded:
		b = appendMapLen(b, 3+present(len(p.Blocks) != 0))
		b = appendField(b, "inference_id", p.InferenceID)
		b = appendField(b, "rule", p.Rule)
		b = appendField(b, "detail", p.Detail)
		if len(p.Blocks) != 0 {
			b = appendStrings(appendString(b, "blocks"), p.Blocks)
		}
	default:
		return b, false
	}
	return b, true
}
