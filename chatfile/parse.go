package chatfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// rawChat is what Parse accepts: Chat, with content that may also be
// an array of text parts and metadata values of any JSON type.
type rawChat struct {
	ID        string                     `json:"id"`
	Model     string                     `json:"model"`
	Messages  []rawMessage               `json:"messages"`
	CreatedAt *time.Time                 `json:"created_at"`
	UpdatedAt *time.Time                 `json:"updated_at"`
	Metadata  map[string]json.RawMessage `json:"metadata"`
}

type rawMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []ToolCall      `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
}

// Parse reads a chat file (see Chat) and checks it: roles, contents
// (a string, null where allowed, or an array of {"type": "text"} parts),
// tool calls (function calls with an ID and a name) and tool results that
// answer an earlier call. Unknown fields are errors, so that nothing in a
// file is silently left out of the log. The error says where and what.
func Parse(data []byte) (*Chat, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw rawChat
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a chat file: %v; expected {\"id\", \"model\", \"messages\": [...], \"created_at\", \"updated_at\", \"metadata\"}", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value; a chat file holds one conversation")
	}
	if raw.Messages == nil {
		return nil, errors.New(`no "messages" array`)
	}
	c := &Chat{ID: raw.ID, Model: raw.Model, Messages: make([]Message, 0, len(raw.Messages)), Metadata: map[string]string{}}
	if raw.CreatedAt != nil {
		c.CreatedAt = raw.CreatedAt.UTC()
	}
	if raw.UpdatedAt != nil {
		c.UpdatedAt = raw.UpdatedAt.UTC()
	}
	for k, v := range raw.Metadata {
		if k == "" {
			return nil, errors.New("metadata has an empty key")
		}
		if string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			c.Metadata[k] = s
			continue
		}
		// Not a string: keep its JSON text, compacted.
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, fmt.Errorf("metadata %q: %v", k, err)
		}
		c.Metadata[k] = buf.String()
	}
	calls := map[string]bool{}
	for i, m := range raw.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		content, isNull, err := parseContent(m.Content)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): content: %v", at, m.Role, err)
		}
		out := Message{Role: m.Role}
		if !isNull {
			out.Content = &content
		}
		if m.Role != RoleAssistant && (m.ReasoningContent != nil || m.ToolCalls != nil) {
			return nil, fmt.Errorf("%s (%s): only assistant messages have reasoning_content or tool_calls", at, m.Role)
		}
		if m.Role != RoleTool && m.ToolCallID != "" {
			return nil, fmt.Errorf("%s (%s): only tool messages have a tool_call_id", at, m.Role)
		}
		switch m.Role {
		case RoleSystem, RoleDeveloper, RoleUser:
			if isNull {
				return nil, fmt.Errorf("%s (%s): content is missing or null; give the message's text", at, m.Role)
			}
		case RoleAssistant:
			if m.ReasoningContent != nil {
				out.ReasoningContent = *m.ReasoningContent
			}
			for j, tc := range m.ToolCalls {
				where := fmt.Sprintf("%s.tool_calls[%d]", at, j)
				switch {
				case tc.ID == "":
					return nil, fmt.Errorf("%s: id is empty; every tool call needs the ID its tool message answers", where)
				case tc.Type != "" && tc.Type != "function":
					return nil, fmt.Errorf("%s: type %q; only function calls are supported", where, tc.Type)
				case tc.Function.Name == "":
					return nil, fmt.Errorf("%s: function.name is empty", where)
				case calls[tc.ID]:
					return nil, fmt.Errorf("%s: id %q is used by an earlier tool call", where, tc.ID)
				}
				calls[tc.ID] = true
				tc.Type = "function"
				out.ToolCalls = append(out.ToolCalls, tc)
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("%s (tool): tool_call_id is empty; it must name the tool call it answers", at)
			}
			if !calls[m.ToolCallID] {
				return nil, fmt.Errorf("%s (tool): tool_call_id %q answers no earlier tool call", at, m.ToolCallID)
			}
			if isNull {
				return nil, fmt.Errorf("%s (tool): content is missing or null; give the tool's result", at)
			}
			out.ToolCallID = m.ToolCallID
		case "":
			return nil, fmt.Errorf("%s: role is missing; use system, developer, user, assistant or tool", at)
		default:
			return nil, fmt.Errorf("%s: role %q is not supported; use system, developer, user, assistant or tool", at, m.Role)
		}
		c.Messages = append(c.Messages, out)
	}
	if c.ID != "" {
		if err := events.ValidateConversationID(c.ID); err != nil {
			return nil, fmt.Errorf("id: %w; change the file's id (or remove it to have one derived from the content)", err)
		}
	}
	return c, nil
}

// parseContent reads a message's content: a string, null (or absent), or
// an array of text parts, which are joined.
func parseContent(raw json.RawMessage) (text string, isNull bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true, nil
	}
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, false, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false, errors.New("must be a string, null or an array of text parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", false, fmt.Errorf("part %d has type %q; only text parts ({\"type\": \"text\", \"text\": ...}) are supported", i, p.Type)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), false, nil
}

// Blocks returns the Turn blocks an import makes of the chat's messages,
// with IDs derived from the message positions ("m3", "m3-reasoning",
// "m3-call-0"), so the same file always gives the same blocks, and the
// file's model as MetaModel on the blocks of assistant messages.
func (c *Chat) Blocks() []events.Block { return c.blocks(true) }

// blocks is Blocks, with the model recorded on assistant blocks (MetaModel)
// when withModel is set.
func (c *Chat) blocks(withModel bool) []events.Block {
	var out []events.Block
	var modelMeta map[string]string
	if withModel && c.Model != "" {
		modelMeta = map[string]string{MetaModel: c.Model}
	}
	for i, m := range c.Messages {
		id := "m" + strconv.Itoa(i)
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		switch m.Role {
		case RoleSystem, RoleDeveloper:
			out = append(out, events.Block{ID: id, Kind: events.KindSystem, Text: text})
		case RoleUser:
			out = append(out, events.Block{ID: id, Kind: events.KindUser, Text: text})
		case RoleTool:
			out = append(out, events.Block{ID: id, Kind: events.KindToolResult, CallID: m.ToolCallID, Text: text})
		case RoleAssistant:
			if m.ReasoningContent != "" {
				out = append(out, events.Block{ID: id + "-reasoning", Kind: events.KindReasoning, Text: m.ReasoningContent, Meta: cloneMeta(modelMeta)})
			}
			if m.Content != nil || (len(m.ToolCalls) == 0 && m.ReasoningContent == "") {
				out = append(out, events.Block{ID: id, Kind: events.KindLLMText, Text: text, Meta: cloneMeta(modelMeta)})
			}
			for j, tc := range m.ToolCalls {
				out = append(out, events.Block{ID: id + "-call-" + strconv.Itoa(j), Kind: events.KindToolCall, CallID: tc.ID,
					ToolName: tc.Function.Name, Arguments: tc.Function.Arguments, Meta: cloneMeta(modelMeta)})
			}
		}
	}
	return out
}

// Turn returns the Turn the chat's messages make, for diff-turns on a chat
// file: Blocks without the model metadata, and the metadata as data.
func (c *Chat) Turn() *projector.Turn {
	t := projector.New(c.ID)
	t.Blocks = c.blocks(false)
	if len(c.Metadata) > 0 {
		t.Data = cloneMeta(c.Metadata)
	}
	return t
}

func cloneMeta(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// digest is a hash of the chat's content, whitespace and key order aside:
// the basis of the import's request ID and of a derived conversation ID.
func (c *Chat) digest() string {
	data, _ := json.Marshal(c) // maps marshal in key order
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
