package calls

import (
	"fmt"
	"slices"
	"sync"

	"github.com/turnlog/turnlog/events"
)

// Render rebuilds the canonical request of a recorded call from blocks
// (the Turn's, or the blocks its inference.started names) and the
// parameters stored under paramsHash in data: each item from its first
// block's MetaItem or default rendering, in the member its MetaField
// names. Its hash (HashPrefix and the SHA-256) is what the gateway
// recorded as the call's input hash when the log holds what the client
// sent.
func Render(api API, blocks []events.Block, data map[string]string, paramsHash string) ([]byte, error) {
	members, lists, _, err := render(api, blocks, data, paramsHash, nil)
	if err != nil {
		return nil, err
	}
	for f, list := range lists {
		members[f] = joinArray(list)
	}
	return joinObject(members), nil
}

// RenderHash is the input hash of Render's result, computed without
// building it.
func RenderHash(api API, blocks []events.Block, data map[string]string, paramsHash string) (string, error) {
	members, lists, _, err := render(api, blocks, data, paramsHash, nil)
	if err != nil {
		return "", err
	}
	return canonicalHash(members, lists), nil
}

// render returns Render's members, the input array apart (lists), whose
// items it writes into buf (grown as needed, and returned: the caller may
// reuse it once done with lists).
func render(api API, blocks []events.Block, data map[string]string, paramsHash string, buf []byte) (map[string][]byte, map[string][][]byte, []byte, error) {
	members, inputs, err := loadParams(data, paramsHash)
	if err != nil {
		return nil, nil, buf, err
	}
	// The input array's items are written one after the other into buf
	// (ends[i] is where item i ends), not each into a buffer of its own.
	size := 0
	for i := range blocks {
		size += len(blocks[i].Text) + len(blocks[i].Meta[MetaItem]) + 48
	}
	buf = slices.Grow(buf[:0], size)
	ends := make([]int, 0, len(blocks))
	fields := map[string][]byte{}
	for i := range blocks {
		b := &blocks[i]
		if b.Meta[MetaPart] != "" {
			continue
		}
		field := b.Meta[MetaField]
		if field != "" {
			v, ok := []byte(b.Meta[MetaItem]), b.Meta[MetaItem] != ""
			if !ok {
				if v, ok = defaultItem(api, field, b); !ok {
					return nil, nil, buf, fmt.Errorf("block %s (%s) has neither %s nor a default form in %s", b.ID, b.Kind, MetaItem, api)
				}
			}
			if _, dup := fields[field]; dup {
				return nil, nil, buf, fmt.Errorf("block %s: a second item for member %q", b.ID, field)
			}
			fields[field] = v
			continue
		}
		if item := b.Meta[MetaItem]; item != "" {
			buf = append(buf, item...)
		} else {
			var ok bool
			if buf, ok = appendDefaultItem(buf, api, field, b); !ok {
				return nil, nil, buf, fmt.Errorf("block %s (%s) has neither %s nor a default form in %s", b.ID, b.Kind, MetaItem, api)
			}
		}
		ends = append(ends, len(buf))
	}
	var list [][]byte
	if len(ends) > 0 {
		list = make([][]byte, len(ends))
		start := 0
		for i, end := range ends {
			list[i] = buf[start:end:end]
			start = end
		}
	}
	main := "messages"
	if api == Responses {
		main = "input"
	}
	lists := map[string][][]byte{}
	for _, f := range inputs {
		if v, ok := fields[f]; ok {
			members[f] = v
			continue
		}
		if f != main {
			return nil, nil, buf, fmt.Errorf("the call had member %q, but no block holds it", f)
		}
		if list == nil {
			list = [][]byte{}
		}
		lists[f] = list
		list = nil
	}
	if len(list) > 0 {
		return nil, nil, buf, fmt.Errorf("%d items but the call had no %q member", len(list), main)
	}
	return members, lists, buf, nil
}

// renderBuffers hold the items of a render being checked.
var renderBuffers = sync.Pool{New: func() any { return new([]byte) }}

// checkRender is the plan's proof: blocks and data, as recorded, render to
// the request the client sent, byte for byte.
func checkRender(req *Request, blocks []events.Block, data map[string]string) error {
	buf := renderBuffers.Get().(*[]byte)
	members, lists, grown, err := render(req.API, blocks, data, req.Params.Hash, *buf)
	defer func() {
		if cap(grown) <= pooledBufferMax {
			*buf = grown[:0]
			renderBuffers.Put(buf)
		}
	}()
	if err != nil {
		return fmt.Errorf("the recorded call would not render again: %w", err)
	}
	if !req.rendersTo(members, lists) {
		return fmt.Errorf("the recorded call renders to %s, not to the request's %s", canonicalHash(members, lists), req.InputHash)
	}
	return nil
}
