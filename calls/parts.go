package calls

// This file holds the digest of what a block holds besides its text
// (events.MetaParts): images, files, audio, built-in tools' items.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"maps"

	"github.com/turnlog/turnlog/events"
)

// textParts are the content parts whose whole content a block's Text
// holds: they are not digested.
var textParts = map[string]bool{"text": true, "input_text": true, "output_text": true}

// thoughtParts are the content parts that hold what the model thought on
// its way to the answer (a Mistral reasoning model's "thinking" part):
// kept in the record, and re-rendered where an app sends them back (the
// block's gateway.item), but not digested, since an app may leave them
// out of the history it sends back, as it may leave out Anthropic's
// thinking blocks: its answer sent back with or without them is the
// model's answer.
var thoughtParts = map[string]bool{"thinking": true}

// partIdentity is what names a part or item that has an identity of its
// own: a built-in tool's call and its result, an item reference.
type partIdentity struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	ToolUseID string `json:"tool_use_id"`
	CallID    string `json:"call_id"`
}

func (p partIdentity) name() string {
	switch {
	case p.ID != "":
		return p.ID
	case p.ToolUseID != "":
		return p.ToolUseID
	}
	return p.CallID
}

// partsDigest accumulates the parts of one block that are not text, and
// apart from them its thought parts (thought).
type partsDigest struct{ h, t hash.Hash }

// add digests one part: by its identity when it has one (a provider's
// item keeps it when an SDK sends it back, whatever else it re-writes),
// else by its canonical JSON without what the model does not read
// (cache_control) and without null members (which SDKs drop or add).
// raw may be nil when only the identity is known (a streamed block).
func (d *partsDigest) add(id partIdentity, raw json.RawMessage) {
	if textParts[id.Type] {
		return
	}
	if thoughtParts[id.Type] {
		if d.t == nil {
			d.t = sha256.New()
		}
		d.t.Write(modelContent(raw))
		d.t.Write([]byte{0})
		return
	}
	if d.h == nil {
		d.h = sha256.New()
	}
	d.h.Write([]byte(id.Type))
	d.h.Write([]byte{0})
	if name := id.name(); name != "" {
		d.h.Write([]byte("id:" + name))
	} else if raw != nil {
		d.h.Write(modelContent(raw))
	}
	d.h.Write([]byte{0})
}

// sum is the digest, "" when no part was added.
func (d *partsDigest) sum() string {
	if d.h == nil {
		return ""
	}
	var s [sha256.Size]byte
	return hex.EncodeToString(d.h.Sum(s[:0])[:16])
}

// modelContent is a part's canonical JSON without cache_control and null
// members at its top level.
func modelContent(raw json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "cache_control")
	for k, v := range m {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(m, k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	if c, err := Canonical(b); err == nil {
		return c
	}
	return b
}

// addChatMeta digests what a chat message holds besides its content: the
// name of its participant (which the model reads: two users of a group
// chat saying "hi" are not one), an assistant's refusal and spoken answer.
// An assistant's name is not digested: the model never writes one, so on
// the model's own answer sent back it is the client's label (LangChain's
// agent names every answer "model", after its graph node), kept in the
// block's item but no other content than the answer the model gave.
func addChatMeta(d *partsDigest, m *chatMessage) {
	if m.Name != "" && m.Role != "function" && m.Role != "assistant" {
		d.add(partIdentity{Type: "name", ID: m.Name}, nil)
	}
	if m.Refusal != "" {
		d.add(partIdentity{Type: "refusal", ID: m.Refusal}, nil)
	}
	if m.Audio != nil && m.Audio.ID != "" {
		d.add(partIdentity{Type: "audio", ID: m.Audio.ID}, nil)
	}
}

// itemDigest is the digest of an item kept whole (a built-in tool's call,
// an item reference, an image block).
func itemDigest(raw json.RawMessage) string {
	var id partIdentity
	if json.Unmarshal(raw, &id) != nil {
		return ""
	}
	var d partsDigest
	d.add(id, raw)
	return d.sum()
}

// withParts returns b with digest d as its events.MetaParts (b unchanged
// when d is "").
func withParts(b events.Block, d string) events.Block {
	if d == "" {
		return b
	}
	m := make(map[string]string, len(b.Meta)+1)
	maps.Copy(m, b.Meta)
	m[events.MetaParts] = d
	b.Meta = m
	return b
}

// thought is the digest of the block's thought parts, "" when it has none.
func (d *partsDigest) thought() string {
	if d.t == nil {
		return ""
	}
	var s [sha256.Size]byte
	return hex.EncodeToString(d.t.Sum(s[:0])[:16])
}
