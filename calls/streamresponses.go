package calls

// This file holds how a streamed Responses API response is read: its
// final response object, which holds every output item whole, and, for a
// stream that fails before it (an error event, a cut, a failed response
// without output), the items as their events delivered them.

import (
	"encoding/json"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// respItem is an output item of a Responses stream as its events built it:
// whole once response.output_item.done sent it, else begun by
// response.output_item.added and grown by its deltas.
type respItem struct {
	item json.RawMessage
	done bool
	// text is a message's text (and refusal) or a reasoning item's text
	// (its summary's parts joined by a blank line, as the stored item's
	// are); args a function call's arguments.
	text, args strings.Builder
	summary    int // the summary part text goes on
}

func (s *Stream) responses(event string, data []byte) {
	var e struct {
		Type         string          `json:"type"`
		Response     json.RawMessage `json:"response"`
		Message      string          `json:"message"`
		OutputIndex  int             `json:"output_index"`
		SummaryIndex int             `json:"summary_index"`
		Item         json.RawMessage `json:"item"`
		Delta        string          `json:"delta"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		s.fail("a stream event is not JSON: " + err.Error())
		return
	}
	if e.Type == "" {
		e.Type = event
	}
	switch e.Type {
	case "response.completed", "response.failed", "response.incomplete":
		s.final = append([]byte(nil), e.Response...)
		s.done = true
	case "error":
		s.fail("error event: " + e.Message)
		s.done = true
	case "response.output_item.added", "response.output_item.done":
		if s.grow(len(e.Item)) {
			it := s.item(e.OutputIndex)
			it.item, it.done = append(json.RawMessage(nil), e.Item...), e.Type == "response.output_item.done"
		}
	case "response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta":
		if s.grow(len(e.Delta)) {
			s.item(e.OutputIndex).text.WriteString(e.Delta)
		}
	case "response.reasoning_summary_text.delta":
		if s.grow(len(e.Delta) + 2) {
			it := s.item(e.OutputIndex)
			if e.SummaryIndex != it.summary {
				it.text.WriteString("\n\n")
				it.summary = e.SummaryIndex
			}
			it.text.WriteString(e.Delta)
		}
	case "response.function_call_arguments.delta":
		if s.grow(len(e.Delta)) {
			s.item(e.OutputIndex).args.WriteString(e.Delta)
		}
	}
}

// grow reports whether n more bytes of the items' events may be kept: the
// items are bounded by the stream's limit, past which they are let go (a
// partial output that large could not be stored anyway).
func (s *Stream) grow(n int) bool {
	if s.itemBytes < 0 {
		return false
	}
	s.itemBytes += n
	if s.itemBytes > s.limit {
		s.items, s.itemBytes = nil, -1
		return false
	}
	return true
}

func (s *Stream) item(i int) *respItem {
	if s.items == nil {
		s.items = map[int]*respItem{}
	}
	it := s.items[i]
	if it == nil {
		it = &respItem{}
		s.items[i] = it
	}
	return it
}

// partialItems are the output items the stream's events delivered, in
// order: whole where output_item.done came, else what the deltas built.
func (s *Stream) partialItems() []Item {
	var out []Item
	for _, i := range sortedInts(s.items) {
		it := s.items[i]
		var bs []events.Block
		if it.done {
			bs, _ = responsesBlocks(it.item)
		} else {
			bs = it.blocks()
		}
		if len(bs) == 0 {
			continue
		}
		item := Item{Blocks: bs}
		item.mark(Responses)
		out = append(out, item)
	}
	return out
}

// blocks is an unfinished item's block: a message's text, a reasoning's,
// a function call's arguments so far; nil for what a delta does not
// build (another item type begun, nothing of it delivered).
func (it *respItem) blocks() []events.Block {
	var head responsesItem
	if len(it.item) > 0 {
		_ = json.Unmarshal(it.item, &head)
	}
	switch head.Type {
	case "reasoning":
		return []events.Block{{Kind: events.KindReasoning, Text: it.text.String()}}
	case "function_call":
		return []events.Block{{Kind: events.KindToolCall, CallID: orDash(head.CallID), ToolName: orDash(head.Name), Arguments: it.args.String()}}
	case "", "message":
		if it.text.Len() == 0 {
			return nil
		}
		return []events.Block{{Kind: events.KindLLMText, Text: it.text.String()}}
	}
	return nil
}
