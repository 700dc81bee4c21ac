// Package chatfile is the conversation file format of `turnlog export`
// and `turnlog import`: OpenAI chat messages as JSON, the shape file-based
// chat tools store (see [Chat]). It reads and writes that shape and turns
// a file into the events that record it ([PlanImport]); storing them is
// replay.Import's. It does no I/O and has no dependency on NATS, so its
// reader, which takes files from anywhere, can be fuzzed cheaply
// (FuzzImport).
package chatfile

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Chat is a conversation as OpenAI chat messages, in the JSON shape that
// file-based chat tools store: `turnlog export` writes it and `turnlog
// import` reads it. The mapping to a Turn's blocks:
//
//   - the active system prompt (the first system block) is the first
//     message, role "system", and the only one with that role; other
//     system blocks keep their place as role "developer";
//   - user blocks are "user" messages;
//   - consecutive llm_text and tool_call blocks form one "assistant"
//     message (texts joined by a blank line in "content", calls in
//     "tool_calls"), as the Chat Completions API wants them; a reasoning
//     block starts a new assistant message and its text goes in
//     "reasoning_content" (encrypted reasoning, opaque and provider
//     specific, is not exported, and Left names it); "other" blocks (compaction summaries)
//     are assistant text prefixed "[summary] ", as a model receives them;
//   - tool_result blocks are "tool" messages with "tool_call_id";
//   - Turn.Data is "metadata"; "model" is the model of the last model
//     call; "created_at" and "updated_at" are the times of the first and
//     last events.
//
// Block IDs, trust and metadata have no place in this shape; `export
// --format turn` keeps everything.
type Chat struct {
	ID        string            `json:"id"`
	Model     string            `json:"model"`
	Messages  []Message         `json:"messages"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	Metadata  map[string]string `json:"metadata"`
	// Left names the blocks whose content this shape cannot carry
	// (encrypted reasoning, a thinking block's signature, images and other
	// content an app sent through the gateway), one line each, so that
	// export says what it left out. It is not written.
	Left []string `json:"-"`
}

// Message is one OpenAI chat message.
type Message struct {
	Role string `json:"role"`
	// Content is null for an assistant message with only tool calls or
	// reasoning.
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function names the function a tool call calls, with its JSON
// arguments as text.
type Function struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// MetaModel is the block metadata key under which an import records the
// file's model on the blocks of its assistant messages (the log has no
// model call for them), so that an export of the imported conversation
// names the same model.
const MetaModel = "model"

// summaryPrefix marks a compaction summary rendered as assistant text.
const summaryPrefix = "[summary] "

// FromTurn renders a Turn as chat messages (see Chat for the mapping).
// It only reads t.
func FromTurn(t *projector.Turn, model string, created, updated time.Time) *Chat {
	c := &Chat{ID: t.Conversation, Model: model, Messages: []Message{}, CreatedAt: created.UTC(), UpdatedAt: updated.UTC(),
		Metadata: map[string]string{}}
	for k, v := range t.Data {
		c.Metadata[k] = v
	}
	str := func(s string) *string { return &s }
	sp, spIndex, hasSystem := t.SystemPrompt()
	if hasSystem {
		c.Messages = append(c.Messages, Message{Role: RoleSystem, Content: str(sp.Text)})
	}
	var cur *Message // the assistant message being built
	var texts []string
	flush := func() {
		if cur == nil {
			return
		}
		if len(texts) > 0 {
			cur.Content = str(strings.Join(texts, "\n\n"))
		}
		c.Messages = append(c.Messages, *cur)
		cur, texts = nil, nil
	}
	assistant := func() {
		if cur == nil {
			cur = &Message{Role: RoleAssistant}
		}
	}
	typed := map[string]bool{}
	for i := range t.Blocks {
		if typ := t.Blocks[i].Meta["gateway.type"]; typ != "" {
			typed[typ] = true
		}
	}
	for i := range t.Blocks {
		b := &t.Blocks[i]
		if what := uncarried(b, typed); what != "" {
			c.Left = append(c.Left, "block "+b.ID+" ("+string(b.Kind)+"): "+what)
		}
		switch b.Kind {
		case events.KindSystem:
			if i == spIndex {
				continue
			}
			flush()
			c.Messages = append(c.Messages, Message{Role: RoleDeveloper, Content: str(b.Text)})
		case events.KindUser:
			flush()
			c.Messages = append(c.Messages, Message{Role: RoleUser, Content: str(b.Text)})
		case events.KindReasoning:
			if b.Text == "" {
				continue // encrypted only: nothing this shape can carry
			}
			flush()
			cur = &Message{Role: RoleAssistant, ReasoningContent: b.Text}
		case events.KindLLMText:
			assistant()
			if b.Text == "" && b.Meta["gateway.type"] != "" {
				// Content recorded by its type alone (a server tool's
				// call or result, an image): Left names it, and its empty
				// text is no part of the message's.
				continue
			}
			texts = append(texts, b.Text)
		case events.KindOther:
			assistant()
			texts = append(texts, summaryPrefix+b.Text)
		case events.KindToolCall:
			assistant()
			cur.ToolCalls = append(cur.ToolCalls, ToolCall{ID: b.CallID, Type: "function",
				Function: Function{Name: b.ToolName, Arguments: b.Arguments}})
		case events.KindToolResult:
			flush()
			c.Messages = append(c.Messages, Message{Role: RoleTool, Content: str(b.Text), ToolCallID: b.CallID})
		}
	}
	flush()
	return c
}

// uncarried says what of b chat messages JSON cannot carry, "" for
// nothing: content the gateway recorded by its type alone (an image, a
// document, a server tool's item), and reasoning's opaque part.
func uncarried(b *events.Block, typed map[string]bool) string {
	typ := b.Meta["gateway.type"]
	if item := b.Meta["gateway.item"]; item != "" {
		if extra := itemExtras(item, typed, b.Kind); len(extra) > 0 {
			return "the item as the app sent it holds " + strings.Join(extra, ", ")
		}
	}
	if streamed := b.Meta["gateway.streamed"]; streamed != "" && typ == "" {
		// A streamed answer keeps there what an answer not streamed
		// keeps in its item (a block with a type of its own, a server
		// tool's, keeps itself there, and is said below).
		if extra := streamedExtras(streamed); len(extra) > 0 {
			return "the answer as streamed holds " + strings.Join(extra, ", ")
		}
	}
	switch {
	case b.Kind == events.KindReasoning && typ != "":
		return typ + " (opaque)"
	case b.Kind == events.KindReasoning && b.Encrypted != "":
		return "the reasoning's encrypted content or signature"
	case typ != "":
		return typ + " content"
	}
	return ""
}

// carried are the members of a sent message or item that chat messages
// JSON carries (or, as IDs, leaves out by design); carriedParts, the
// content parts it carries.
var (
	carried = map[string]bool{"role": true, "content": true, "type": true, "id": true, "status": true, "tool_call_id": true, "tool_calls": true, "call_id": true, "arguments": true, "output": true}
	// Parts that are blocks of their own (the Messages API's), or text.
	carriedParts = map[string]bool{"text": true, "input_text": true, "output_text": true, "thinking": true, "redacted_thinking": true, "tool_use": true, "tool_result": true}
)

// itemExtras lists what of item, the canonical JSON of a message or item
// the gateway kept as it was sent (gateway.item), chat messages JSON
// cannot carry: members such as name or refusal, and content parts other
// than text (image_url, input_audio, file, …) that are not blocks of their
// own (typed holds the gateway.type of the Turn's blocks), sorted. A tool
// call's name is carried (function.name), a message's is not.
func itemExtras(item string, typed map[string]bool, kind events.Kind) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(item), &m) != nil {
		return nil
	}
	var out []string
	for k, v := range m {
		if !carried[k] && string(v) != "null" && !(k == "name" && kind == events.KindToolCall) {
			out = append(out, k)
		}
	}
	out = append(out, partExtras(m["content"], typed, out)...)
	slices.Sort(out)
	return out
}

// partExtras lists the content parts of content that chat messages JSON
// cannot carry and have not been said (in said), as "<type> content". A
// Chat Completions "thinking" part (a Mistral reasoning model's: its
// "thinking" a list of parts) is one: unlike a Messages thinking block,
// it is no block of its own.
func partExtras(content json.RawMessage, typed map[string]bool, said []string) []string {
	var parts []struct {
		Type     string          `json:"type"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		carriedPart := carriedParts[p.Type] && !(p.Type == "thinking" && len(p.Thinking) > 0 && p.Thinking[0] == '[')
		if t := p.Type + " content"; !carriedPart && !typed[p.Type] && !slices.Contains(said, t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// streamedExtras lists what of streamed, a streamed answer's
// gateway.streamed (what the stream said beside the block's text: a
// refusal, reasoning, annotations, content parts that are not text),
// chat messages JSON cannot carry, sorted: its members, its content parts
// by type. A Messages text block's citations are not said, as they are
// not for the answer not streamed (whose text parts hold them).
func streamedExtras(streamed string) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(streamed), &m) != nil {
		return nil
	}
	var out []string
	for k := range m {
		if k == "citations" {
			continue
		}
		if k != "content_parts" {
			out = append(out, k)
			continue
		}
		parts := partExtras(m[k], nil, nil)
		if len(parts) == 0 {
			parts = []string{k} // past its bound: {"omitted_bytes": n}
		}
		out = append(out, parts...)
	}
	slices.Sort(out)
	return out
}
