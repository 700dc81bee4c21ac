package events

// This file holds how decoded payloads are made canonical: empty optional
// maps and slices become nil, as the wire form cannot tell them apart.

// canonical returns p with its optional maps and slices set to nil when
// they are empty. The wire form omits empty ones (omitempty), so an empty
// map and a missing one are the same message; decoding both to nil makes
// Decode a fixed point of the codec: Decode(Encode(Decode(m))) equals
// Decode(m), which replay and fuzzing rely on. A payload without empty
// ones, the usual case, is returned as it is, without a copy.
func canonical(p Payload) Payload {
	switch v := p.(type) {
	case ConversationStarted:
		if hollow(v.Data) || v.Blocks != nil && len(v.Blocks) == 0 || hollowBlocks(v.Blocks) {
			v.Blocks = canonicalBlocks(v.Blocks)
			v.Data = nilIfEmpty(v.Data)
			return v
		}
	case UserAppended:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case SystemPromptSet:
		if hollow(v.Meta) || hollow(v.Variables) || hollowSpans(v.Untrusted) {
			v.Meta = nilIfEmpty(v.Meta)
			v.Variables = nilIfEmpty(v.Variables)
			v.Untrusted = nilIfNoSpans(v.Untrusted)
			return v
		}
	case SystemPromptReplaced:
		if hollow(v.Meta) || hollow(v.Variables) || hollowSpans(v.Untrusted) {
			v.Meta = nilIfEmpty(v.Meta)
			v.Variables = nilIfEmpty(v.Variables)
			v.Untrusted = nilIfNoSpans(v.Untrusted)
			return v
		}
	case ReasoningAppended:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case LLMTextAppended:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case ToolCalled:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case ToolResult:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case BlockSplit:
		canonicalBlocks(v.Into) // validation rejects an empty Into anyway
	case BlockInserted:
		if hollow(v.Block.Meta) || hollowSpans(v.Block.Untrusted) {
			v.Block.Meta = nilIfEmpty(v.Block.Meta)
			v.Block.Untrusted = nilIfNoSpans(v.Block.Untrusted)
			return v
		}
	case TurnCompacted:
		if v.Summary != nil {
			v.Summary.Meta = nilIfEmpty(v.Summary.Meta) // a fresh pointer: changing it changes p
			v.Summary.Untrusted = nilIfNoSpans(v.Summary.Untrusted)
		}
	case InferenceStarted:
		if v.InputBlocks != nil && len(v.InputBlocks) == 0 || hollowSpans(v.Untrusted) || hollow(v.Gateway) {
			if len(v.InputBlocks) == 0 {
				v.InputBlocks = nil
			}
			v.Untrusted = nilIfNoSpans(v.Untrusted)
			v.Gateway = nilIfEmpty(v.Gateway)
			return v
		}
	case InferenceFailed:
		if v.Partial != nil && len(v.Partial) == 0 || hollowBlocks(v.Partial) {
			v.Partial = canonicalBlocks(v.Partial)
			return v
		}
	case FindingRecorded:
		if v.Blocks != nil && len(v.Blocks) == 0 {
			v.Blocks = nil
			return v
		}
	case MessageRemoved:
		if hollow(v.Headers) {
			v.Headers = nil
			return v
		}
	case DataSet:
		if hollow(v.Values) || v.Unset != nil && len(v.Unset) == 0 {
			v.Values = nilIfEmpty(v.Values)
			if len(v.Unset) == 0 {
				v.Unset = nil
			}
			return v
		}
	}
	return p
}

// hollow reports whether m is empty but not nil.
func hollow(m map[string]string) bool { return m != nil && len(m) == 0 }

func hollowBlocks(bs []Block) bool {
	for _, b := range bs {
		if hollow(b.Meta) || hollowSpans(b.Untrusted) {
			return true
		}
	}
	return false
}

// hollowSpans reports whether s is empty but not nil.
func hollowSpans(s []Span) bool { return s != nil && len(s) == 0 }

func nilIfNoSpans(s []Span) []Span {
	if len(s) == 0 {
		return nil
	}
	return s
}

// canonicalBlocks applies canonical's rule to blocks the decoder just
// made, in place.
func canonicalBlocks(bs []Block) []Block {
	if len(bs) == 0 {
		return nil
	}
	for i := range bs {
		bs[i].Meta = nilIfEmpty(bs[i].Meta)
		bs[i].Untrusted = nilIfNoSpans(bs[i].Untrusted)
	}
	return bs
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
