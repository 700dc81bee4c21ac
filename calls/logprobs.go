package calls

// This file holds how a streamed Chat Completions choice's logprobs are
// kept: each chunk carries the log probabilities of the tokens it adds
// ({"content": [...], "refusal": [...]}), and the record keeps them joined,
// as a response that is not streamed writes them.

import (
	"bytes"
	"encoding/json"
)

// streamLogprobs are one streamed choice's logprobs so far.
type streamLogprobs struct {
	content, refusal []json.RawMessage
	seen             bool // a chunk carried logprobs (an empty list too)
	size             int  // bytes of the elements kept or counted
	omitted          bool // past MaxLogprobsBytes: counted, not kept
}

// add takes a chunk's logprobs member (null or absent: nothing).
func (l *streamLogprobs) add(raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var chunk struct {
		Content []json.RawMessage `json:"content"`
		Refusal []json.RawMessage `json:"refusal"`
	}
	if json.Unmarshal(raw, &chunk) != nil {
		return
	}
	l.seen = true
	for _, part := range [][]json.RawMessage{chunk.Content, chunk.Refusal} {
		for _, e := range part {
			l.size += len(e) + 1
		}
	}
	if l.size > MaxLogprobsBytes {
		l.omitted, l.content, l.refusal = true, nil, nil
	}
	if l.omitted {
		return
	}
	l.content = joinRaw(l.content, chunk.Content)
	l.refusal = joinRaw(l.refusal, chunk.Refusal)
}

// json is the choice's logprobs object, {"content": [...] or null,
// "refusal": [...] or null}; "" when no chunk carried any or when they
// were omitted.
func (l *streamLogprobs) json() string {
	if !l.seen || l.omitted {
		return ""
	}
	list := func(b *bytes.Buffer, es []json.RawMessage) {
		if es == nil {
			b.WriteString("null")
			return
		}
		b.WriteByte('[')
		for i, e := range es {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(e)
		}
		b.WriteByte(']')
	}
	var b bytes.Buffer
	b.WriteString(`{"content":`)
	list(&b, l.content)
	b.WriteString(`,"refusal":`)
	list(&b, l.refusal)
	b.WriteByte('}')
	return b.String()
}

// fill sets o's logprobs from l.
func (l *streamLogprobs) fill(o *Output) {
	if l.omitted {
		o.LogprobsOmitted = l.size
		return
	}
	o.Logprobs = l.json()
}

// joinRaw appends copies of more to list; a list a chunk sent (an empty
// one too) is no longer null.
func joinRaw(list, more []json.RawMessage) []json.RawMessage {
	if more != nil && list == nil {
		list = []json.RawMessage{}
	}
	for _, e := range more {
		list = append(list, append(json.RawMessage(nil), e...))
	}
	return list
}
