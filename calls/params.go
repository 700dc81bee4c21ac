package calls

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
)

// Data keys under which a conversation's Turn keeps the request parameters
// of its gateway calls, content-addressed: ParamsKey(h) holds a call's
// parameters (see Params), ValueKey(h) a member too large to repeat in
// each parameters record (a list of tools, a JSON schema). A call whose
// parameters were seen before in the conversation stores nothing new.
const (
	paramsPrefix = "gateway.params."
	valuePrefix  = "gateway.value."
)

// ParamsKey is the data key of the parameters whose address is h.
func ParamsKey(h string) string { return paramsPrefix + h }

// ValueKey is the data key of the member value whose address is h.
func ValueKey(h string) string { return valuePrefix + h }

// inlineLimit is the size past which a member value is stored on its own.
const inlineLimit = 256

// Params are a request without its input: every other member, canonical.
// Stored, they are one JSON object {"inline": {name: value},
// "refs": {name: address}, "inputs": [names]}: small members inline, large
// ones by the address of their value, and the names of the input members
// the request had, which Render fills in from the Turn's blocks.
type Params struct {
	// Hash is the address of Doc.
	Hash string
	// Doc is the stored form.
	Doc []byte
	// Values are the large members' values by address.
	Values map[string][]byte
}

type paramsDoc struct {
	Inline map[string]json.RawMessage `json:"inline,omitempty"`
	Refs   map[string]string          `json:"refs,omitempty"`
	Inputs []string                   `json:"inputs,omitempty"`
}

func addr(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func newParams(canon map[string][]byte, inputs []string) Params {
	p := Params{Values: map[string][]byte{}}
	inline := map[string][]byte{}
	refs := map[string][]byte{}
	isInput := map[string]bool{}
	for _, f := range inputs {
		isInput[f] = true
	}
	for k, v := range canon {
		switch {
		case isInput[k]:
		case len(v) > inlineLimit:
			h := addr(v)
			p.Values[h] = v
			refs[k] = appendString(nil, h)
		default:
			inline[k] = v
		}
	}
	doc := map[string][]byte{}
	if len(inline) > 0 {
		doc["inline"] = joinObject(inline)
	}
	if len(refs) > 0 {
		doc["refs"] = joinObject(refs)
	}
	if len(inputs) > 0 {
		names := make([][]byte, len(inputs))
		for i, f := range inputs {
			names[i] = appendString(nil, f)
		}
		doc["inputs"] = joinArray(names)
	}
	p.Doc = joinObject(doc)
	p.Hash = addr(p.Doc)
	return p
}

// DataValues returns the data entries the Turn lacks to hold p: none when
// the conversation has seen these parameters before.
func (p Params) DataValues(data map[string]string) map[string]string {
	out := map[string]string{}
	if _, ok := data[ParamsKey(p.Hash)]; !ok {
		out[ParamsKey(p.Hash)] = string(p.Doc)
	}
	for h, v := range p.Values {
		if _, ok := data[ValueKey(h)]; !ok {
			out[ValueKey(h)] = string(v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// loadParams reads the parameters stored under address h from a Turn's
// data: the members (large ones resolved) and the input member names.
func loadParams(data map[string]string, h string) (map[string][]byte, []string, error) {
	raw, ok := data[ParamsKey(h)]
	if !ok {
		return nil, nil, fmt.Errorf("the conversation's data holds no parameters %s", h)
	}
	doc, err := parsedParams.get(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("parameters %s: %w", h, err)
	}
	members := make(map[string][]byte, len(doc.Inline)+len(doc.Refs)+len(doc.Inputs))
	for k, v := range doc.Inline {
		members[k] = v
	}
	for k, ref := range doc.Refs {
		v, ok := data[ValueKey(ref)]
		if !ok {
			return nil, nil, fmt.Errorf("parameters %s: member %q refers to value %s, which the conversation's data does not hold", h, k, ref)
		}
		members[k] = []byte(v)
	}
	return members, doc.Inputs, nil
}

// paramsDocs remembers parameter records as read, by their text: every
// call of a conversation renders its parameters again (the render check),
// and they rarely change. Bounded in entries; safe for concurrent use.
type paramsDocs struct {
	mu    sync.Mutex
	byDoc map[string]*paramsDoc
	order []string // oldest first
}

// paramsDocsMax bounds paramsDocs (records are a few hundred bytes).
const paramsDocsMax = 1024

var parsedParams = &paramsDocs{byDoc: map[string]*paramsDoc{}}

// get returns raw read; the caller must not change it.
func (c *paramsDocs) get(raw string) (*paramsDoc, error) {
	c.mu.Lock()
	doc, ok := c.byDoc[raw]
	c.mu.Unlock()
	if ok {
		return doc, nil
	}
	doc = &paramsDoc{}
	if err := json.Unmarshal([]byte(raw), doc); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byDoc[raw]; !ok {
		c.byDoc[raw] = doc
		c.order = append(c.order, raw)
		if len(c.order) > paramsDocsMax {
			delete(c.byDoc, c.order[0])
			c.order = c.order[1:]
		}
	}
	return doc, nil
}
