package calls

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/turnlog/turnlog/events"
)

// Block metadata the gateway sets (see the package doc).
const (
	// MetaItem is the canonical JSON of the input item whose first block
	// this is, when the block's default rendering is not that JSON.
	MetaItem = "gateway.item"
	// MetaPart marks a block that is not the first of its item: the item
	// is rendered by its first block.
	MetaPart = "gateway.part"
	// MetaField names the request member an item came from when it is not
	// the API's list of messages or items: "instructions" (Responses),
	// "input" (Responses' input as one string), "system" (Messages).
	MetaField = "gateway.field"
)

// MetaScope is the key of inference.started's gateway map that holds the
// call's scope (Request.Scope), when it has one: the end user whose
// states the call's threading reads and writes.
const MetaScope = "scope"

// HashPrefix starts every input hash the gateway records: "jcs:" and the
// hex SHA-256 of the request's canonical JSON (see Canonical). It tells
// replay --verify to re-render the call (Render) rather than hash a Turn.
const HashPrefix = "jcs:"

// Request is a call's request as the gateway records it.
type Request struct {
	API API
	// Model is the model the request names ("" when it names none).
	Model string
	// Stream is whether the client asked for server-sent events.
	Stream bool
	// PreviousResponseID is the Responses API's previous_response_id.
	PreviousResponseID string
	// ProviderConversation is the Responses API's conversation (OpenAI's
	// Conversations API), written as its ID or as {"id": ...}: the
	// provider holds the conversation's items and reads them before the
	// call's input.
	ProviderConversation string
	// Scope is the end user the request names, "" for none: its
	// safety_identifier, else its user (Chat Completions, Responses), or
	// its metadata.user_id (Messages). Threading by content finds only
	// states of the same scope (ScopedChain), so two end users' chats that
	// begin alike ("hi", "Hello! How can I help?") stay two conversations.
	Scope string
	// Items are the input's items in order: the instructions or system
	// first, then the messages or input items.
	Items []Item
	// Params is the request without its input, content-addressed (see
	// Params).
	Params Params
	// InputHash is HashPrefix and the SHA-256 of the canonical request.
	InputHash string
	// canon and lists are the canonical request InputHash was taken of
	// (canonicalHash's arguments), kept to compare a render with.
	canon map[string][]byte
	lists map[string][][]byte
	// requestBlocks, requestKeys and requestChain are RequestBlocks,
	// RequestKeys and RequestChain, once asked.
	requestBlocks             []events.Block
	requestKeys, requestChain [][32]byte
}

// Item is one element of a call's input or output.
type Item struct {
	// Field is the request member it came from ("" for the list of
	// messages or items; see MetaField).
	Field string
	// Canon is the item's canonical JSON; nil for an output item read from
	// a stream, whose JSON the client's SDK assembles.
	Canon []byte
	// Blocks are what it holds, without IDs; their Meta is set as the
	// package doc says, and read-only (an item from a ParseCache shares
	// it with the cache).
	Blocks []events.Block
	// blockKeys are the Blocks' content keys (Key), once computed.
	blockKeys [][32]byte
}

// inputFields are, per API, the request members that are the input and
// how they may be written: as a list of items, or as a string (or, for
// Messages' system, a list of text blocks, which is one item).
var inputFields = map[API][]string{
	ChatCompletions: {"messages"},
	Responses:       {"instructions", "input"},
	Messages:        {"system", "messages"},
}

// ParseRequest reads a request body of api. A body that is not a JSON
// object, or whose input is not of the API's shape, is an error saying
// what is wrong: the gateway then records the call as unparsed.
func ParseRequest(api API, body []byte) (*Request, error) {
	return (*ParseCache)(nil).ParseRequest(api, body)
}

// ParseRequest is ParseRequest reading through the cache: the items and
// parameters it saw before, byte for byte, are not read again.
func (c *ParseCache) ParseRequest(api API, body []byte) (*Request, error) {
	members, err := splitObject(body)
	if err != nil {
		return nil, fmt.Errorf("the body is not a JSON object: %w", err)
	}
	top := make(map[string][]byte, len(members))
	for _, m := range members {
		// A name given twice keeps its last value, as JCS reads it; the
		// value it replaces must be JSON all the same.
		if prev, ok := top[m.name]; ok && !json.Valid(prev) {
			return nil, fmt.Errorf("the body is not JSON: member %q", m.name)
		}
		top[m.name] = m.raw
	}
	req := &Request{API: api}
	// Read as encoding/json would, a value of another type read as none
	// (canonical below says whether it is JSON at all).
	if m, ok := top["model"]; ok {
		req.Model, _ = stringMember("model", m)
	}
	if s, ok := top["stream"]; ok {
		req.Stream = string(s) == "true"
	}
	if p, ok := top["previous_response_id"]; ok && api == Responses {
		req.PreviousResponseID, _ = stringMember("previous_response_id", p)
	}
	if p, ok := top["conversation"]; ok && api == Responses {
		req.ProviderConversation = conversationMember(p)
	}
	req.Scope = scopeOf(api, top)
	canon := make(map[string][]byte, len(top))
	lists := map[string][][]byte{}
	var inputs []string
	for _, field := range inputFields[api] {
		raw, ok := top[field]
		if !ok {
			continue
		}
		items, memberCanon, list, isInput, err := c.parseInput(api, field, raw)
		if err != nil {
			return nil, err
		}
		if !isInput {
			continue // null and the like: a parameter like the others
		}
		inputs = append(inputs, field)
		req.Items = append(req.Items, items...)
		canon[field] = memberCanon
		if list != nil {
			lists[field] = list
		}
	}
	for k, v := range top {
		if _, done := canon[k]; done {
			continue
		}
		cv, err := c.canonical(v)
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", k, err)
		}
		canon[k] = cv
	}
	req.Params = c.params(canon, inputs)
	req.InputHash = canonicalHash(canon, lists)
	req.canon, req.lists = canon, lists
	return req, nil
}

// parseInput reads one input member, and returns its canonical JSON too:
// an array's as the canonical JSON of its items (list), never joined (the
// input hash is computed from them as they are: canonicalHash).
// isInput is false when the member is not written as input (a null
// instructions): it is then a parameter.
func (c *ParseCache) parseInput(api API, field string, raw []byte) (items []Item, canon []byte, list [][]byte, isInput bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil, nil, false, nil
	}
	switch {
	case raw[0] == '"':
		if field == "messages" {
			return nil, nil, nil, false, fmt.Errorf("messages is a string; the API wants a list of messages")
		}
		it, err := c.item(api, field, raw, func() (Item, error) {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return Item{}, fmt.Errorf("%s: %w", field, err)
			}
			kind := events.KindSystem
			if field == "input" {
				kind = events.KindUser
			}
			return newItem(api, field, raw, []events.Block{{Kind: kind, Text: s}})
		})
		return []Item{it}, it.Canon, nil, true, err
	case raw[0] == '[':
		if field == "system" || field == "instructions" {
			// Anthropic's system as text blocks: one item.
			it, err := c.item(api, field, raw, func() (Item, error) {
				var d partsDigest
				text, err := readContent(raw, &d)
				if err != nil {
					return Item{}, fmt.Errorf("%s: %w", field, err)
				}
				return newItem(api, field, raw, []events.Block{withParts(events.Block{Kind: events.KindSystem, Text: text}, d.sum())})
			})
			return []Item{it}, it.Canon, nil, true, err
		}
		raws, err := splitArray(raw)
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("%s: %w", field, err)
		}
		items, err := c.items(api, raws, func(i int) (Item, error) {
			blocks, err := itemBlocks(api, raws[i])
			if err != nil {
				return Item{}, err
			}
			return newItem(api, "", raws[i], blocks)
		})
		if err != nil {
			var ie *itemError
			if errors.As(err, &ie) {
				return nil, nil, nil, false, fmt.Errorf("%s[%d]: %w", field, ie.index, ie.err)
			}
			return nil, nil, nil, false, fmt.Errorf("%s: %w", field, err)
		}
		canons := make([][]byte, len(items))
		for i := range items {
			canons[i] = items[i].Canon
		}
		return items, nil, canons, true, nil
	case bytes.Equal(raw, []byte("null")):
		return nil, nil, nil, false, nil
	}
	return nil, nil, nil, false, fmt.Errorf("%s is neither a string nor a list", field)
}

// newItem canonicalises an item and marks its blocks.
func newItem(api API, field string, raw []byte, blocks []events.Block) (Item, error) {
	c, err := canonicalItem(raw)
	if err != nil {
		return Item{}, err
	}
	it := Item{Field: field, Canon: c, Blocks: blocks}
	it.mark(api)
	it.keys()
	return it, nil
}

// mark sets the gateway metadata of the item's blocks: MetaItem on the
// first unless its default rendering is the item, MetaPart on the others,
// MetaField on all when the item is not in the list of messages.
func (it *Item) mark(api API) {
	for i := range it.Blocks {
		b := &it.Blocks[i]
		b.Meta = desiredMeta(api, it, i, b.Meta)
	}
}

// desiredMeta returns meta with the gateway keys block i of it must have,
// set or removed ("" values are removed from the result).
func desiredMeta(api API, it *Item, i int, meta map[string]string) map[string]string {
	want := map[string]string{MetaItem: "", MetaPart: "", MetaField: it.Field}
	if i > 0 {
		want[MetaPart] = "1"
	} else if it.Canon != nil {
		b := it.Blocks[0]
		if d, ok := defaultItem(api, it.Field, &b); !ok || len(it.Blocks) != 1 || !bytes.Equal(d, it.Canon) {
			want[MetaItem] = string(it.Canon)
		}
	}
	out := make(map[string]string, len(meta)+2)
	for k, v := range meta {
		out[k] = v
	}
	for k, v := range want {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// WireSHA256 is the hex SHA-256 of body as it was sent: what the gateway
// records as the call's wire hash.
func WireSHA256(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maxScope bounds a scope as the record keeps it: a longer one (the
// providers take 64 to 256 characters) is kept as its hash.
const maxScope = 256

// scopeOf reads the end user a request names (Request.Scope) from its
// members.
func scopeOf(api API, top map[string][]byte) string {
	var scope string
	if api == Messages {
		var m struct {
			UserID string `json:"user_id"`
		}
		if raw, ok := top["metadata"]; ok && json.Unmarshal(raw, &m) == nil {
			scope = m.UserID
		}
	} else {
		for _, name := range []string{"safety_identifier", "user"} {
			if raw, ok := top[name]; ok {
				if s, err := stringMember(name, raw); err == nil && s != "" {
					scope = s
					break
				}
			}
		}
	}
	if len(scope) > maxScope {
		sum := sha256.Sum256([]byte(scope))
		scope = "sha256:" + hex.EncodeToString(sum[:])
	}
	return scope
}
