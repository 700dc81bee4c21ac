package calls

// This file holds item references: a Responses API input item
// {"type": "item_reference", "id": "msg_..."} stands for an output item
// the provider stored (what the Vercel AI SDK sends back by default with
// store on). The gateway reads a reference as the item it names, found
// among the blocks of the call that produced it, so that the chat is
// threaded, diffed and checked by what the model read; the item's first
// block keeps the reference as its MetaItem, so that the call's input
// still renders to the bytes the client sent.

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// itemReference is the Responses API's type of an item reference.
const itemReference = "item_reference"

// IsReference reports whether b is an item reference read as itself: the
// item it names was not found (see Request.Resolve).
func IsReference(b *events.Block) bool { return b.Meta["gateway.type"] == itemReference }

// References returns the IDs the request's item references name, in
// order, each once; nil for a request that holds none.
func (r *Request) References() []string {
	if r.API != Responses {
		return nil
	}
	var ids []string
	for i := range r.Items {
		if id, ok := r.Items[i].referenceID(); ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// referenceID is the ID an item reference names; false for another item.
func (it *Item) referenceID() (string, bool) {
	if len(it.Blocks) != 1 || !IsReference(&it.Blocks[0]) || it.Canon == nil {
		return "", false
	}
	id := itemID(string(it.Canon))
	return id, id != ""
}

// sentAsReference reports whether the client sent the item as an item
// reference (resolved or not).
func (it *Item) sentAsReference() bool {
	if it.Canon == nil || !bytes.Contains(it.Canon, []byte(itemReference)) {
		return false
	}
	var head struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(it.Canon, &head) == nil && head.Type == itemReference
}

// Resolve returns the request with each item reference whose ID found
// holds read as those blocks (ItemBlocks' answer, which the request then
// owns); r itself when found resolves none. The request's canonical
// input, and so its InputHash, is unchanged: the reference's first block
// keeps the reference as its MetaItem, and renders as it.
func (r *Request) Resolve(found map[string][]events.Block) *Request {
	var out *Request
	for i := range r.Items {
		id, ok := r.Items[i].referenceID()
		if !ok {
			continue
		}
		blocks := found[id]
		if len(blocks) == 0 {
			continue
		}
		if out == nil {
			c := *r
			c.Items = append([]Item(nil), r.Items...)
			c.requestBlocks, c.requestKeys, c.requestChain = nil, nil, nil
			out = &c
		}
		it := Item{Field: r.Items[i].Field, Canon: r.Items[i].Canon, Blocks: blocks}
		it.mark(Responses)
		it.keys()
		out.Items[i] = it
	}
	if out == nil {
		return r
	}
	return out
}

// referencedBlock is a recorded block as a reference to its item reads:
// its content, without its ID and without metadata but for what Key
// compares (mark then sets how the item is written).
func referencedBlock(b *events.Block) events.Block {
	c := events.Block{Kind: b.Kind, Text: b.Text, CallID: b.CallID, ToolName: b.ToolName, Arguments: b.Arguments,
		Encrypted: b.Encrypted, IsError: b.IsError}
	for _, k := range []string{"gateway.type", events.MetaParts} {
		if v := b.Meta[k]; v != "" {
			if c.Meta == nil {
				c.Meta = map[string]string{}
			}
			c.Meta[k] = v
		}
	}
	return c
}

// ItemBlocks returns the content of the blocks of the item whose ID is id
// among blocks (a Turn's, in order; see itemAt), copied (see
// referencedBlock) for Request.Resolve. ok is false when blocks hold no
// such item.
func ItemBlocks(blocks []events.Block, id string) ([]events.Block, bool) {
	start, end, ok := itemAt(blocks, id)
	if !ok {
		return nil, false
	}
	out := make([]events.Block, 0, end-start)
	for i := start; i < end; i++ {
		out = append(out, referencedBlock(&blocks[i]))
	}
	return out, true
}

// itemAt finds the item whose ID is id among blocks: the block that names
// it (its MetaItem's id, or MetaItemID for an item the provider named
// when the app put it into its conversation) and the blocks of the same
// item after it (MetaPart), blocks[start:end]. A reference that was itself
// not found is not its item.
func itemAt(blocks []events.Block, id string) (start, end int, ok bool) {
	for i := range blocks {
		b := &blocks[i]
		if b.Meta[MetaItemID] != id {
			item := b.Meta[MetaItem]
			if item == "" || !strings.Contains(item, id) || IsReference(b) || itemID(item) != id {
				continue
			}
		}
		end := i + 1
		for end < len(blocks) && blocks[end].Meta[MetaPart] != "" {
			end++
		}
		return i, end, true
	}
	return 0, 0, false
}

// itemID is the id member of an item's JSON ("" for none).
func itemID(item string) string {
	if item == "" {
		return ""
	}
	var it struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(item), &it) != nil {
		return ""
	}
	return it.ID
}

// ItemIDs returns the IDs of the output's items that have one, in order:
// what a later call's item references may name.
func (o *Output) ItemIDs() []string {
	var ids []string
	for i := range o.Items {
		if o.Items[i].Canon == nil {
			continue
		}
		if id := itemID(string(o.Items[i].Canon)); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}
