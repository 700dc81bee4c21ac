package calls

// This file holds how a streamed choice's content parts that are not text
// are put together: a server that streams its model's thinking a token a
// delta sends one part a token, and the record keeps the part the
// response not streamed would have written.

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
)

// streamedParts are a streamed choice's content parts that are not text,
// as a response that is not streamed writes them. Mistral's reasoning
// models stream their thinking as one {"type": "thinking", "thinking":
// [{"type": "text", "text": token}]} part a delta, about 15 times its
// text's size: kept as they came, a few thousand tokens of thinking passed
// MaxStreamedBytes, and their digest was not the answer's. Consecutive
// thinking parts are joined into one, their texts into one text, as the
// answer not streamed holds it; other parts are kept as they came.
type streamedParts struct {
	done []json.RawMessage // the parts before run
	run  *thinkingRun      // the thinking part still streaming
}

// thinkingRun is a thinking part joined from consecutive deltas.
type thinkingRun struct {
	head  map[string]json.RawMessage // its members but "thinking"
	inner []json.RawMessage          // its "thinking" parts before text
	text  strings.Builder            // its last part's text, while a text part
	texts bool                       // text holds a part (maybe empty)
}

// add takes one part of a delta's content.
func (p *streamedParts) add(raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var m map[string]json.RawMessage
	var inner []json.RawMessage
	if json.Unmarshal(raw, &m) != nil || string(m["type"]) != `"thinking"` || json.Unmarshal(m["thinking"], &inner) != nil {
		p.close()
		p.done = append(p.done, append(json.RawMessage(nil), raw...))
		return
	}
	delete(m, "thinking")
	if p.run == nil || !sameMembers(p.run.head, m) {
		p.close()
		p.run = &thinkingRun{head: m}
	}
	for _, e := range inner {
		p.run.add(e)
	}
}

// add takes one part of a thinking delta's "thinking": a text part's text
// goes on the text before it.
func (r *thinkingRun) add(e json.RawMessage) {
	var tp map[string]json.RawMessage
	var text string
	if json.Unmarshal(e, &tp) == nil && len(tp) == 2 && string(tp["type"]) == `"text"` && json.Unmarshal(tp["text"], &text) == nil && tp["text"][0] == '"' {
		r.text.WriteString(text)
		r.texts = true
		return
	}
	r.closeText()
	r.inner = append(r.inner, append(json.RawMessage(nil), e...))
}

func (r *thinkingRun) closeText() {
	if !r.texts {
		return
	}
	r.inner = append(r.inner, textPart(r.text.String()))
	r.text.Reset()
	r.texts = false
}

// part is the run's part as one JSON object (the run may go on).
func (r *thinkingRun) part() json.RawMessage {
	inner := r.inner[:len(r.inner):len(r.inner)]
	if r.texts {
		inner = append(inner, textPart(r.text.String()))
	}
	m := maps.Clone(r.head)
	m["thinking"] = json.RawMessage("[]")
	if len(inner) > 0 {
		m["thinking"] = json.RawMessage(jsonArray(inner))
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// close ends the thinking part streaming, if any.
func (p *streamedParts) close() {
	if p.run == nil {
		return
	}
	if b := p.run.part(); b != nil {
		p.done = append(p.done, b)
	}
	p.run = nil
}

// all are the parts, in order, so far.
func (p *streamedParts) all() []json.RawMessage {
	if p.run == nil {
		return p.done
	}
	out := p.done[:len(p.done):len(p.done)]
	if b := p.run.part(); b != nil {
		out = append(out, b)
	}
	return out
}

// textPart is {"type": "text", "text": text}.
func textPart(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	return b
}

// json is the parts as a JSON array, nil when none came.
func (p *streamedParts) json() json.RawMessage {
	if a := jsonArray(p.all()); a != "" {
		return json.RawMessage(a)
	}
	return nil
}

// array is json bounded by MaxStreamedBytes: past it, {"omitted_bytes":
// n} in its place.
func (p *streamedParts) array() json.RawMessage {
	a := p.json()
	if len(a) > MaxStreamedBytes {
		return json.RawMessage(omittedJSON(len(a)))
	}
	return a
}

// empty reports whether no part came.
func (p *streamedParts) empty() bool { return p.run == nil && len(p.done) == 0 }

// sameMembers reports whether a and b have the same members, written
// alike.
func sameMembers(a, b map[string]json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
