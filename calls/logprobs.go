package calls

// This file holds how a streamed Chat Completions choice's logprobs are
// kept: each chunk carries the log probabilities of the tokens it adds
// ({"content": [...], "refusal": [...]}), and the record keeps them joined,
// as a response that is not streamed writes them.

import (
	"bytes"
	"encoding/json"
	"slices"
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
	return `{"content":` + listOrNull(l.content) + `,"refusal":` + listOrNull(l.refusal) + `}`
}

// listOrNull is es as a JSON array, null when no chunk sent the list.
func listOrNull(es []json.RawMessage) string {
	switch {
	case es == nil:
		return "null"
	case len(es) == 0:
		return "[]"
	}
	return jsonArray(es)
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

// othersBudget is what the choices after the first may keep of their
// logprobs: MaxLogprobsBytes bounds a call's together, so that its
// outcome fits one NATS message whatever its "n", the first choice's
// first (none left when the first's were too large to keep).
func (o *Output) othersBudget() int {
	if o.LogprobsOmitted > 0 {
		return 0
	}
	return max(MaxLogprobsBytes-len(o.Logprobs), 0)
}

// boundOtherLogprobs returns choices, the choices after the first as a
// response writes them, with the logprobs of each past budget (spent in
// order) replaced by {"omitted_bytes": n}.
func boundOtherLogprobs(choices []json.RawMessage, budget int) []json.RawMessage {
	out, cloned := choices, false
	for i, c := range choices {
		if !bytes.Contains(c, []byte(`"logprobs"`)) {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(c, &m) != nil {
			continue
		}
		lp := m["logprobs"]
		if len(lp) == 0 || string(lp) == "null" {
			continue
		}
		if len(lp) <= budget {
			budget -= len(lp)
			continue
		}
		budget = 0 // the later ones are left out too: kept in order
		m["logprobs"] = json.RawMessage(omittedJSON(len(lp)))
		b, err := json.Marshal(m)
		if err != nil {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(choices), true
		}
		out[i] = b
	}
	return out
}
