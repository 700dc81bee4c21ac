package calls

// How one input or output item reads as blocks, per API.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// part is a content part or content block: the fields of all three APIs
// that carry what the blocks hold.
type part struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// readContent reads a content member written as a string or as a list of
// parts: the text of its text parts, one per line; the parts that are not
// text go into d (nil: not digested).
func readContent(raw json.RawMessage, d *partsDigest) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		if s, err := stringMember("content", raw); err == nil {
			return s, nil
		}
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return "", fmt.Errorf("content is neither a string nor a list of parts: %w", err)
	}
	var texts []string
	for _, r := range raws {
		var p struct {
			partIdentity
			Text string `json:"text"`
		}
		if err := json.Unmarshal(r, &p); err != nil {
			return "", fmt.Errorf("content is neither a string nor a list of parts: %w", err)
		}
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
		if d != nil {
			d.add(p.partIdentity, r)
		}
	}
	return strings.Join(texts, "\n"), nil
}

func kindOfRole(role string) (events.Kind, error) {
	switch role {
	case "system", "developer":
		return events.KindSystem, nil
	case "user":
		return events.KindUser, nil
	case "assistant":
		return events.KindLLMText, nil
	case "tool", "function":
		return events.KindToolResult, nil
	}
	return "", fmt.Errorf("role %q is not system, developer, user, assistant or tool", role)
}

// itemBlocks reads one element of the list of messages or input items.
// Every item gives at least one block.
func itemBlocks(api API, raw json.RawMessage) ([]events.Block, error) {
	switch api {
	case ChatCompletions:
		return chatBlocks(raw)
	case Responses:
		return responsesBlocks(raw)
	case Messages:
		return messagesBlocks(raw)
	}
	return nil, fmt.Errorf("unknown api %q", api)
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	// Name and FunctionCall are the legacy function calling's (before
	// tool_calls, still accepted): an assistant message's function_call,
	// answered by a message of role "function" that names the function.
	Name         string        `json:"name"`
	FunctionCall *functionCall `json:"function_call"`
	// Refusal and Audio are an assistant message's refusal and the ID of
	// its spoken answer, which the model reads back (see addChatMeta).
	Refusal string `json:"refusal"`
	Audio   *struct {
		ID string `json:"id"`
	} `json:"audio"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func chatBlocks(raw json.RawMessage) ([]events.Block, error) {
	var m chatMessage
	if decodeChatMessage(raw, &m) != nil {
		m = chatMessage{}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("not a message: %w", err)
		}
	}
	return chatMessageBlocks(m)
}

// chatMessageBlocks are the blocks of a chat message, read.
func chatMessageBlocks(m chatMessage) ([]events.Block, error) {
	kind, err := kindOfRole(m.Role)
	if err != nil {
		return nil, err
	}
	var d partsDigest
	addChatMeta(&d, &m)
	text, err := readContent(m.Content, &d)
	if err != nil {
		return nil, err
	}
	parts := d.sum()
	switch kind {
	case events.KindToolResult:
		id := m.ToolCallID
		if m.Role == "function" {
			// Legacy function calling has no call IDs: the result
			// answers the latest call of the function it names.
			id = events.LegacyFunctionCallID(m.Name)
		}
		return []events.Block{withParts(events.Block{Kind: kind, CallID: orDash(id), Text: text}, parts)}, nil
	case events.KindLLMText:
		var bs []events.Block
		if text != "" || parts != "" || len(m.ToolCalls) == 0 && m.FunctionCall == nil {
			bs = append(bs, withThought(withParts(events.Block{Kind: kind, Text: text}, parts), d.thought()))
		}
		if fc := m.FunctionCall; fc != nil {
			bs = append(bs, events.Block{Kind: events.KindToolCall, CallID: events.LegacyFunctionCallID(fc.Name), ToolName: orDash(fc.Name), Arguments: fc.Arguments})
		}
		for _, c := range m.ToolCalls {
			bs = append(bs, events.Block{Kind: events.KindToolCall, CallID: orDash(c.ID), ToolName: orDash(c.Function.Name), Arguments: c.Function.Arguments})
		}
		return bs, nil
	}
	return []events.Block{withParts(events.Block{Kind: kind, Text: text}, parts)}, nil
}

// orDash stands for a missing ID or name, which blocks require: the item's
// JSON (kept in MetaItem) says what was really sent.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Summary []part          `json:"summary"`
	Enc     string          `json:"encrypted_content"`
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Args    string          `json:"arguments"`
	Output  json.RawMessage `json:"output"`
}

func responsesBlocks(raw json.RawMessage) ([]events.Block, error) {
	var it responsesItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return nil, fmt.Errorf("not an input item: %w", err)
	}
	switch it.Type {
	case "", "message":
		kind, err := kindOfRole(it.Role)
		if err != nil {
			return nil, err
		}
		var d partsDigest
		text, err := readContent(it.Content, &d)
		if err != nil {
			return nil, err
		}
		return []events.Block{withParts(events.Block{Kind: kind, Text: text}, d.sum())}, nil
	case "reasoning":
		texts := make([]string, len(it.Summary))
		for i, s := range it.Summary {
			texts[i] = s.Text
		}
		return []events.Block{{Kind: events.KindReasoning, Text: strings.Join(texts, "\n\n"), Encrypted: it.Enc}}, nil
	case "function_call":
		return []events.Block{{Kind: events.KindToolCall, CallID: orDash(it.CallID), ToolName: orDash(it.Name), Arguments: it.Args}}, nil
	case "function_call_output":
		var d partsDigest
		text, err := readContent(it.Output, &d)
		if err != nil {
			return nil, err
		}
		return []events.Block{withParts(events.Block{Kind: events.KindToolResult, CallID: orDash(it.CallID), Text: text}, d.sum())}, nil
	}
	// Other item types (item references, built-in tools' calls): kept
	// whole in MetaItem, as the model's side of the conversation.
	return []events.Block{withParts(events.Block{Kind: events.KindLLMText, Meta: map[string]string{"gateway.type": it.Type}}, itemDigest(raw))}, nil
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func messagesBlocks(raw json.RawMessage) ([]events.Block, error) {
	var m anthropicMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a message: %w", err)
	}
	kind, err := kindOfRole(m.Role)
	if err != nil || (kind != events.KindUser && kind != events.KindLLMText && m.Role != "system") {
		return nil, fmt.Errorf("role %q: the Messages API takes user, assistant and system messages", m.Role)
	}
	// A system message among the others is Anthropic's mid-conversation
	// system message (the beta mid-conversation-system-2026-04-07, which
	// the Vercel AI SDK's @ai-sdk/anthropic sends for a system message
	// after the first): text the model reads as a system prompt, there.
	c := bytes.TrimSpace(m.Content)
	if len(c) > 0 && c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, err
		}
		return []events.Block{{Kind: kind, Text: s}}, nil
	}
	parts, raws, err := readBlocks(c)
	if err != nil {
		return nil, fmt.Errorf("content is neither a string nor a list of content blocks: %w", err)
	}
	bs, err := anthropicBlocks(kind, parts, raws)
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		bs = append(bs, events.Block{Kind: kind})
	}
	return bs, nil
}

// readBlocks reads a list of content blocks, each as read and as written.
func readBlocks(raw json.RawMessage) ([]part, []json.RawMessage, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, nil, err
	}
	parts := make([]part, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &parts[i]); err != nil {
			return nil, nil, fmt.Errorf("content block %d: %w", i, err)
		}
	}
	return parts, raws, nil
}

// anthropicBlocks reads content blocks of a message whose role gives kind;
// raws, when known, are the blocks' JSON (see partsDigest.add).
func anthropicBlocks(kind events.Kind, parts []part, raws []json.RawMessage) ([]events.Block, error) {
	var bs []events.Block
	for i, p := range parts {
		switch p.Type {
		case "text":
			bs = append(bs, events.Block{Kind: kind, Text: p.Text})
		case "thinking":
			bs = append(bs, events.Block{Kind: events.KindReasoning, Text: p.Thinking, Encrypted: p.Signature})
		case "redacted_thinking":
			bs = append(bs, events.Block{Kind: events.KindReasoning, Encrypted: p.Data, Meta: map[string]string{"gateway.type": p.Type}})
		case "tool_use":
			args, err := Canonical(orEmptyObject(p.Input))
			if err != nil {
				return nil, fmt.Errorf("tool_use %s input: %w", p.ID, err)
			}
			bs = append(bs, events.Block{Kind: events.KindToolCall, CallID: orDash(p.ID), ToolName: orDash(p.Name), Arguments: string(args)})
		case "tool_result":
			var d partsDigest
			text, err := readContent(p.Content, &d)
			if err != nil {
				return nil, err
			}
			bs = append(bs, withParts(events.Block{Kind: events.KindToolResult, CallID: orDash(p.ToolUseID), Text: text, IsError: p.IsError}, d.sum()))
		default:
			// Images, documents, server tools' blocks: kept in MetaItem.
			var raw json.RawMessage
			if raws != nil {
				raw = raws[i]
			}
			var d partsDigest
			d.add(partIdentity{Type: p.Type, ID: p.ID, ToolUseID: p.ToolUseID}, raw)
			bs = append(bs, withParts(events.Block{Kind: kind, Meta: map[string]string{"gateway.type": p.Type}}, d.sum()))
		}
	}
	return bs, nil
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// defaultItem is the canonical JSON a lone block renders as when its item
// keeps no MetaItem: the plain form of each API's common messages.
func defaultItem(api API, field string, b *events.Block) ([]byte, bool) {
	return appendDefaultItem(nil, api, field, b)
}

// appendDefaultItem appends defaultItem's rendering to dst: the render
// check writes a call's whole input into one buffer this way.
func appendDefaultItem(dst []byte, api API, field string, b *events.Block) ([]byte, bool) {
	if field != "" {
		if b.Kind == events.KindSystem || b.Kind == events.KindUser {
			return appendString(dst, b.Text), true
		}
		return dst, false
	}
	// obj writes a canonical object of string members given in the
	// canonical order of their (ASCII) names.
	obj := func(kv ...string) []byte {
		out := append(dst, '{')
		for i := 0; i < len(kv); i += 2 {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendString(out, kv[i])
			out = append(out, ':')
			out = appendString(out, kv[i+1])
		}
		return append(out, '}')
	}
	switch api {
	case ChatCompletions:
		switch b.Kind {
		case events.KindSystem:
			return obj("content", b.Text, "role", "system"), true
		case events.KindUser:
			return obj("content", b.Text, "role", "user"), true
		case events.KindLLMText:
			return obj("content", b.Text, "role", "assistant"), true
		case events.KindToolResult:
			return obj("content", b.Text, "role", "tool", "tool_call_id", b.CallID), true
		}
	case Responses:
		switch b.Kind {
		case events.KindSystem:
			return obj("content", b.Text, "role", "system"), true
		case events.KindUser:
			return obj("content", b.Text, "role", "user"), true
		case events.KindToolResult:
			return obj("call_id", b.CallID, "output", b.Text, "type", "function_call_output"), true
		case events.KindToolCall:
			return obj("arguments", b.Arguments, "call_id", b.CallID, "name", b.ToolName, "type", "function_call"), true
		}
	case Messages:
		switch b.Kind {
		case events.KindUser:
			return obj("content", b.Text, "role", "user"), true
		case events.KindLLMText:
			return obj("content", b.Text, "role", "assistant"), true
		}
	}
	return dst, false
}
