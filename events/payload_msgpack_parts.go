package events

import (
	"encoding/binary"
	"slices"
)

// The parts several payloads share (blocks, spans, string lists and maps,
// a lock change, a call's wire), appended the way reflection encodes them
// (see payload_msgpack.go).

// appendBlock appends a Block as reflection encodes the struct.
func appendBlock(b []byte, k *Block) []byte {
	b = appendMapLen(b, 2+
		present(k.Text != "")+
		present(k.Trust != "")+
		present(len(k.Meta) != 0)+
		present(k.CallID != "")+
		present(k.ToolName != "")+
		present(k.Arguments != "")+
		present(k.IsError)+
		present(k.Encrypted != "")+
		present(len(k.Untrusted) != 0))
	b = appendField(b, "id", k.ID)
	b = appendField(b, "kind", string(k.Kind))
	if k.Text != "" {
		b = appendField(b, "text", k.Text)
	}
	if k.Trust != "" {
		b = appendField(b, "trust", string(k.Trust))
	}
	if len(k.Meta) != 0 {
		b = appendStringMap(appendString(b, "meta"), k.Meta)
	}
	if k.CallID != "" {
		b = appendField(b, "call_id", k.CallID)
	}
	if k.ToolName != "" {
		b = appendField(b, "tool", k.ToolName)
	}
	if k.Arguments != "" {
		b = appendField(b, "args", k.Arguments)
	}
	if k.IsError {
		b = append(appendString(b, "is_error"), 0xc3)
	}
	if k.Encrypted != "" {
		b = appendField(b, "enc", k.Encrypted)
	}
	if len(k.Untrusted) != 0 {
		b = appendSpans(appendString(b, "untrusted"), k.Untrusted)
	}
	return b
}

// appendSpans appends a non-empty []Span as reflection encodes it: an
// array of maps, "start" and "end" always, "var" unless empty.
func appendSpans(b []byte, spans []Span) []byte {
	b = appendArrayLen(b, len(spans))
	for _, s := range spans {
		b = appendMapLen(b, 2+present(s.Var != ""))
		b = appendInt(appendString(b, "start"), int64(s.Start))
		b = appendInt(appendString(b, "end"), int64(s.End))
		if s.Var != "" {
			b = appendField(b, "var", s.Var)
		}
	}
	return b
}

// appendBlocks appends a []Block: nil for a nil slice, else an array.
func appendBlocks(b []byte, bs []Block) []byte {
	if bs == nil {
		return append(b, 0xc0)
	}
	b = appendArrayLen(b, len(bs))
	for i := range bs {
		b = appendBlock(b, &bs[i])
	}
	return b
}

// appendField appends a key and a string value.
func appendField(b []byte, key, value string) []byte {
	return appendString(appendString(b, key), value)
}

// appendStrings appends a []string as msgpack's encodeStringSlice: nil for
// a nil slice, else an array of strings.
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 0xc0)
	}
	b = appendArrayLen(b, len(ss))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// appendStringMap appends a map[string]string as msgpack's
// encodeMapStringStringValue with sorted keys: nil for a nil map, else its
// entries by key. Sorted, the same events always give the same bytes,
// which Append relies on to recognize a retried step as already stored
// (in Go's random map order, a step with a two-key map could come back as
// a conflict). It is one of the orders the unsorted encoder could write,
// so every reader, old or new, decodes it alike.
func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, 0xc0)
	}
	b = appendMapLen(b, len(m))
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendString(appendString(b, k), m[k])
	}
	return b
}

// appendMapLen writes a map header as msgpack's EncodeMapLen.
func appendMapLen(b []byte, n int) []byte { return appendLen(b, n, 0x80, 0xde, 0xdf) }

// appendInt64 writes n as msgpack's EncodeInt64: always int 64.
func appendInt64(b []byte, n int64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// present is 1 for a field that is written, 0 for one omitempty omits.
func present(written bool) int {
	if written {
		return 1
	}
	return 0
}

// appendLockChange encodes a SystemPromptLocked, or a SystemPromptUnlocked
// converted to one: the two payloads have the same fields and keys.
func appendLockChange(b []byte, p SystemPromptLocked) []byte {
	b = appendMapLen(b, 1+present(p.Reason != ""))
	b = appendField(b, "block_id", p.BlockID)
	if p.Reason != "" {
		b = appendField(b, "reason", p.Reason)
	}
	return b
}

// wireFields counts the fields of w that are written: reflection inlines
// the embedded Wire, each field omitted when empty.
func wireFields(w Wire) int {
	return present(w.SHA256 != "") + present(w.Version != "") + present(w.Params != "")
}

// appendWire appends w's fields that are not empty, in field order.
func appendWire(b []byte, w Wire) []byte {
	if w.SHA256 != "" {
		b = appendField(b, "wire_sha256", w.SHA256)
	}
	if w.Version != "" {
		b = appendField(b, "wire_version", w.Version)
	}
	if w.Params != "" {
		b = appendField(b, "wire_params", w.Params)
	}
	return b
}
