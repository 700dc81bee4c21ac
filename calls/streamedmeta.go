package calls

// This file holds what a streamed response says of its output beyond the
// blocks' text, calls and reasoning: the sources a model that searched
// cites (Chat Completions' annotations, Messages' citations) and a
// Messages server tool's blocks (its call, the search's results). A
// response that is not streamed keeps them in its item's JSON (MetaItem);
// a streamed one has no item JSON (its client's SDK assembles it), so they
// are kept on the block as a response that is not streamed writes them.

import (
	"encoding/json"
	"strconv"

	"github.com/turnlog/turnlog/events"
)

// MetaStreamed is, on a block of a streamed response's output, what the
// stream said of it that the block's text, call and reasoning do not
// hold, as a JSON object written as a response that is not streamed
// writes it: {"annotations": [...], "refusal": "...", "audio": {"id",
// "transcript"}, "reasoning_content" (or "reasoning"): "..."} (Chat
// Completions, each member when the stream sent it), {"citations": [...]} (a Messages
// text block), or a Messages server tool's block whole
// (server_tool_use with its input assembled, web_search_tool_result, ...).
// Neither threading nor the rendering of the next call's input reads it:
// the client's SDK sends the message back as it assembles it, and that is
// recorded as the client writes it (MetaItem). MaxStreamedBytes bounds an
// answer's sources (annotations, citations, server tools' blocks)
// together, its blocks' in order; past it a block's are
// {"omitted_bytes": n}. What the model said (a refusal, reasoning, a
// transcript) is kept whole, as its text is.
const MetaStreamed = "gateway.streamed"

// MaxStreamedBytes bounds MetaStreamed on one answer's blocks together: a
// search's results carry their pages' encrypted content, and an outcome
// too large for one NATS message would cost the answer its record.
const MaxStreamedBytes = 256 << 10

// streamedList is one block's annotations or citations as they stream.
type streamedList struct {
	items []json.RawMessage
	size  int
}

// add appends copies of more, counting only once past MaxStreamedBytes.
func (l *streamedList) add(more ...json.RawMessage) {
	for _, e := range more {
		if len(e) == 0 || string(e) == "null" {
			continue
		}
		l.size += len(e) + 1
		if l.size <= MaxStreamedBytes {
			l.items = append(l.items, append(json.RawMessage(nil), e...))
		}
	}
}

// object is {"<member>": [...]}, "" when nothing came.
func (l *streamedList) object(member string) string {
	switch {
	case l.size == 0:
		return ""
	case l.size > MaxStreamedBytes:
		return omittedJSON(l.size)
	}
	return `{"` + member + `":` + jsonArray(l.items) + `}`
}

// array is the list as a JSON array (nil when nothing came; past
// MaxStreamedBytes, {"omitted_bytes": n} in its place).
func (l *streamedList) array() json.RawMessage {
	switch {
	case l.size == 0:
		return nil
	case l.size > MaxStreamedBytes:
		return json.RawMessage(omittedJSON(l.size))
	}
	return json.RawMessage(jsonArray(l.items))
}

// omittedJSON stands for n bytes the record leaves out.
func omittedJSON(n int) string { return `{"omitted_bytes":` + strconv.Itoa(n) + `}` }

// serverBlock is a Messages content block of another type than text,
// thinking and tool_use (a server tool's call or result) whole: its
// content_block_start, with the input its input_json_delta events
// assembled. "" when the block has no JSON of its own.
func serverBlock(b *streamBlock) string {
	if len(b.raw) == 0 {
		return ""
	}
	raw := b.raw
	if b.arg.Len() > 0 {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil && json.Valid([]byte(b.arg.String())) {
			m["input"] = json.RawMessage(b.arg.String())
			if out, err := json.Marshal(m); err == nil {
				raw = out
			}
		}
	}
	if c, err := Canonical(raw); err == nil {
		raw = c
	}
	if len(raw) > MaxStreamedBytes {
		return omittedJSON(len(raw))
	}
	return string(raw)
}

// setStreamed sets b's MetaStreamed to v ("" leaves it alone).
func setStreamed(b *events.Block, v string) {
	if v == "" {
		return
	}
	meta := make(map[string]string, len(b.Meta)+1)
	for k, x := range b.Meta {
		meta[k] = x
	}
	meta[MetaStreamed] = v
	b.Meta = meta
}
