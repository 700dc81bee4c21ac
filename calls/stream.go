package calls

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// Stream reads a streamed response (server-sent events) as it passes, one
// piece at a time, into the Output it amounts to. It never changes or
// holds back the bytes: the gateway forwards them and hands Stream a copy.
// Its memory is what the output holds plus one unfinished event, bounded by
// the caller's limit (see NewStream).
type Stream struct {
	api   API
	limit int
	buf   []byte // the unfinished line
	event string
	data  []byte
	done  bool // the stream's final event was seen
	err   string
	// transient: the error event names an error a retry may get past.
	transient bool
	over      bool

	out Output
	// Chat Completions: the first choice, and the others (a request's "n"
	// above 1) by their index.
	chatText strings.Builder
	// chatRefusal and chatSaid: the first choice's refusal, and its
	// reasoning and spoken answer.
	chatRefusal strings.Builder
	chatSaid    choiceSaid
	chatCalls   map[int]*streamCall
	chatLogp    streamLogprobs
	// chatAnnotations: the first choice's (MetaStreamed).
	chatAnnotations streamedList
	others          map[int]*otherChoice
	// Messages: the content blocks, and the usage message_start and
	// message_delta said, the latter's counts over the former's.
	blocks   map[int]*streamBlock
	msgUsage usage
	// Responses: the final response object, when the stream sent it, and
	// the output items as their events built them (see respItem).
	final     []byte
	items     map[int]*respItem
	itemBytes int
}

type streamCall struct {
	id, name string
	args     strings.Builder
	legacy   bool // legacy function calling's function_call: no ID
}

// block is the tool call's block.
func (c *streamCall) block() events.Block {
	id := orDash(c.id)
	if c.legacy {
		id = events.LegacyFunctionCallID(c.name)
	}
	return events.Block{Kind: events.KindToolCall, CallID: id, ToolName: orDash(c.name), Arguments: c.args.String()}
}

type streamBlock struct {
	typ, id, name        string
	toolUseID            string
	text, sig, data, arg strings.Builder
	input                json.RawMessage
	// raw is the block's content_block_start JSON, kept for a block that
	// is not text, thinking or tool_use; citations are a text block's.
	raw       json.RawMessage
	citations streamedList
}

// NewStream starts reading a stream of api; limit bounds the bytes it keeps
// (an event larger than that, or an output, makes the record say so instead
// of holding it).
func NewStream(api API, limit int) *Stream {
	return &Stream{api: api, limit: limit, chatCalls: map[int]*streamCall{}, blocks: map[int]*streamBlock{}}
}

// Final reports whether a Responses stream sent its final response object
// (response.completed, .failed or .incomplete), which says how the
// response ended; an error event ends a stream without one.
func (s *Stream) Final() bool { return s.final != nil }

// Done reports whether the stream's final event has been seen
// ([DONE], response.completed/failed/incomplete, message_stop, error).
func (s *Stream) Done() bool { return s.done }

// Write feeds the next bytes of the stream. It never fails: what cannot be
// read ends up in the Output's Error.
func (s *Stream) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(s.buf)+len(p) > s.limit {
				s.over = true
				s.buf = s.buf[:0]
			} else {
				s.buf = append(s.buf, p...)
			}
			break
		}
		line := p[:i]
		if len(s.buf) > 0 {
			line = append(s.buf, line...)
			s.buf = s.buf[:0]
		}
		s.line(bytes.TrimSuffix(line, []byte("\r")))
		p = p[i+1:]
	}
	return n, nil
}

func (s *Stream) line(l []byte) {
	switch {
	case len(l) == 0:
		if len(s.data) > 0 || s.event != "" {
			s.dispatch(s.event, s.data)
		}
		s.event, s.data = "", s.data[:0]
	case bytes.HasPrefix(l, []byte("event:")):
		s.event = string(bytes.TrimSpace(l[6:]))
	case bytes.HasPrefix(l, []byte("data:")):
		d := l[5:]
		if len(d) > 0 && d[0] == ' ' {
			d = d[1:]
		}
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(d) > s.limit {
			s.over = true
			return
		}
		s.data = append(s.data, d...)
	}
}

func (s *Stream) fail(msg string) {
	if s.err == "" {
		s.err = msg
	}
}

func (s *Stream) dispatch(event string, data []byte) {
	if s.done {
		return
	}
	switch s.api {
	case ChatCompletions:
		s.chat(data)
	case Responses:
		s.responses(event, data)
	case Messages:
		s.messages(event, data)
	}
}

func (s *Stream) messages(event string, data []byte) {
	var e struct {
		Type    string `json:"type"`
		Index   int    `json:"index"`
		Message struct {
			ID    string `json:"id"`
			Model string `json:"model"`
			Usage *usage `json:"usage"`
		} `json:"message"`
		ContentBlock json.RawMessage `json:"content_block"`
		Delta        struct {
			Type        string          `json:"type"`
			Citation    json.RawMessage `json:"citation"`
			Text        string          `json:"text"`
			Thinking    string          `json:"thinking"`
			Signature   string          `json:"signature"`
			PartialJSON string          `json:"partial_json"`
			StopReason  string          `json:"stop_reason"`
		} `json:"delta"`
		Usage *messageDeltaUsage `json:"usage"`
		Error *apiError          `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		s.fail("a stream event is not JSON: " + err.Error())
		return
	}
	if e.Type == "" {
		e.Type = event
	}
	switch e.Type {
	case "message_start":
		s.out.ResponseID, s.out.Model = e.Message.ID, e.Message.Model
		if e.Message.Usage != nil {
			s.msgUsage = *e.Message.Usage
			s.msgUsage.fill(&s.out)
		}
	case "content_block_start":
		var cb struct {
			part
			Citations []json.RawMessage `json:"citations"`
		}
		if len(e.ContentBlock) == 0 || string(e.ContentBlock) == "null" || json.Unmarshal(e.ContentBlock, &cb) != nil {
			return
		}
		b := &streamBlock{typ: cb.Type, id: cb.ID, name: cb.Name, toolUseID: cb.ToolUseID, input: cb.Input}
		b.text.WriteString(cb.Text + cb.Thinking)
		b.sig.WriteString(cb.Signature)
		b.data.WriteString(cb.Data)
		b.citations.add(cb.Citations...)
		switch cb.Type {
		case "text", "thinking", "redacted_thinking", "tool_use":
		default:
			b.raw = append(json.RawMessage(nil), e.ContentBlock...)
		}
		s.blocks[e.Index] = b
	case "content_block_delta":
		b := s.blocks[e.Index]
		if b == nil {
			s.fail(fmt.Sprintf("content_block_delta for block %d, which no content_block_start opened", e.Index))
			return
		}
		b.text.WriteString(e.Delta.Text + e.Delta.Thinking)
		b.sig.WriteString(e.Delta.Signature)
		b.arg.WriteString(e.Delta.PartialJSON)
		b.citations.add(e.Delta.Citation)
	case "message_delta":
		if e.Delta.StopReason != "" {
			s.out.StopReason = e.Delta.StopReason
		}
		if e.Usage != nil {
			e.Usage.apply(&s.msgUsage)
			s.msgUsage.fill(&s.out)
		}
	case "message_stop":
		s.done = true
	case "error":
		s.fail(e.Error.String())
		s.transient = s.transient || e.Error.transient()
		s.done = true
	}
}

// Output returns what the stream amounted to so far. A stream that ended
// without its final event has Error set by the caller (see Cut).
func (s *Stream) Output() (*Output, error) {
	if s.over {
		s.fail(fmt.Sprintf("the stream holds an event larger than %d bytes, which the record leaves out", s.limit))
	}
	var o *Output
	switch s.api {
	case Responses:
		if s.final == nil {
			// No final response: what the items' events delivered.
			o = &Output{Items: s.partialItems()}
			break
		}
		var err error
		if o, err = parseResponsesObject(s.final); err != nil {
			return nil, err
		}
		if o.Error != "" && len(o.Items) == 0 {
			// A failed response that holds no output: what its
			// events delivered before.
			o.Items = s.partialItems()
		}
	case ChatCompletions:
		o = &s.out
		var bs []events.Block
		if b, ok := s.chatBlock(); ok {
			bs = append(bs, b)
		}
		for _, i := range sortedInts(s.chatCalls) {
			bs = append(bs, s.chatCalls[i].block())
		}
		if len(bs) > 0 {
			// On the message's first block, its text or, an answer of
			// tool calls alone, its first call: the reasoning streamed
			// before them is the app's all the same.
			setStreamed(&bs[0], s.chatStreamed())
		}
		it := Item{Blocks: bs}
		it.mark(s.api)
		o.Items = []Item{it}
		s.chatLogp.fill(o)
		o.OtherChoices = s.otherChoices(o.othersBudget())
	case Messages:
		o = &s.out
		var parts []part
		var streamed []string
		for _, i := range sortedInts(s.blocks) {
			b := s.blocks[i]
			if b.raw != nil {
				streamed = append(streamed, serverBlock(b))
			} else {
				streamed = append(streamed, b.citations.object("citations"))
			}
			p := part{Type: b.typ, ID: b.id, Name: b.name, ToolUseID: b.toolUseID}
			switch b.typ {
			case "text":
				p.Text = b.text.String()
			case "thinking":
				p.Thinking, p.Signature = b.text.String(), b.sig.String()
			case "redacted_thinking":
				p.Data = b.data.String()
			case "tool_use":
				p.Input = b.input
				if b.arg.Len() > 0 {
					p.Input = json.RawMessage(b.arg.String())
				}
			}
			parts = append(parts, p)
		}
		bs, err := s.messagesBlocks(parts)
		if err != nil {
			return nil, err
		}
		budget := MaxStreamedBytes                   // the answer's, its blocks' in order
		for i := range min(len(bs), len(streamed)) { // a block a part
			v := streamed[i]
			if len(v) > budget {
				v = omittedJSON(len(v)) // a smaller one after it may fit
			} else {
				budget -= len(v)
			}
			setStreamed(&bs[i], v)
		}
		if len(bs) > 0 {
			it := Item{Blocks: bs}
			it.mark(s.api)
			o.Items = []Item{it}
		}
	}
	if o.Error == "" {
		o.Error, o.ErrorTransient = s.err, s.transient
	}
	return o, nil
}

// messagesBlocks is anthropicBlocks of the stream's content blocks. A
// stream may have stopped in a tool call's arguments: one that failed (an
// error event, a cut), or one the model ended there (stop_reason
// "max_tokens"), which the app got whole. That call's block keeps them as
// they came, not JSON, instead of making the whole output unreadable.
func (s *Stream) messagesBlocks(parts []part) ([]events.Block, error) {
	var bs []events.Block
	for _, p := range parts {
		if p.Type == "tool_use" && len(p.Input) > 0 && !json.Valid(p.Input) {
			bs = append(bs, events.Block{Kind: events.KindToolCall, CallID: orDash(p.ID), ToolName: orDash(p.Name), Arguments: string(p.Input)})
			continue
		}
		b, err := anthropicBlocks(events.KindLLMText, []part{p}, nil)
		if err != nil {
			return nil, err
		}
		bs = append(bs, b...)
	}
	return bs, nil
}

func sortedInts[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
