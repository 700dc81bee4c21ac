package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

const (
	summaryPrefix = "[summary] "
	errorPrefix   = "error: "
)

// request is a Turn rendered for the Messages API.
type request struct {
	system   []sdk.TextBlockParam
	messages []sdk.MessageParam
}

// render turns blocks into the system field and messages; the rules are in
// the package documentation. It only reads blocks. notes, when not nil,
// receives what became of the blocks the messages do not show plainly
// (engine.BlockNote).
func render(blocks []events.Block, notes *[]engine.BlockNote) (request, error) {
	note := func(i int, sent bool, format string, args ...any) {
		if notes != nil {
			*notes = append(*notes, engine.BlockNote{Index: i, ID: blocks[i].ID, Sent: sent, Note: fmt.Sprintf(format, args...)})
		}
	}
	// opened is the index of the block that opened the message being
	// built.
	opened := -1
	var (
		r        request
		role     sdk.MessageParamRole
		content  []sdk.ContentBlockParamUnion
		seenUser bool
		// pending is the index of the reasoning block whose thinking ends
		// content, until a text or tool_use block follows it.
		pending = -1
	)
	orphan := func(i int, follower string) error {
		return fmt.Errorf("block %d (%s): thinking is followed by %s, not by the text or tool call it preceded; "+
			"the Messages API rejects that (add reasoningguard_repair to the profile's middlewares to drop such blocks)",
			i, blocks[i].ID, follower)
	}
	flush := func() {
		if len(content) > 0 {
			r.messages = append(r.messages, sdk.MessageParam{Role: role, Content: content})
		}
		content, role = nil, ""
	}
	// firstMessage is the index of the block that starts the first
	// message.
	firstMessage := -1
	add := func(i int, side sdk.MessageParamRole, c ...sdk.ContentBlockParamUnion) {
		if firstMessage < 0 {
			firstMessage = i
		}
		if side != role {
			flush()
			role, opened = side, i
		} else {
			note(i, true, "merged into the %s message of block %d (%s): the Messages API alternates user and assistant messages", side, opened, blocks[opened].ID)
		}
		content = append(content, c...)
	}
	for i, b := range blocks {
		if pending >= 0 {
			switch b.Kind {
			case events.KindLLMText, events.KindToolCall:
				pending = -1
			default:
				return request{}, orphan(pending, "a "+string(b.Kind)+" block")
			}
		}
		switch b.Kind {
		case events.KindSystem:
			r.system = append(r.system, sdk.TextBlockParam{Text: b.Text})
			note(i, true, "sent in the request's top-level system field, not among the messages")
		case events.KindUser:
			seenUser = true
			if b.Text != "" {
				add(i, sdk.MessageParamRoleUser, sdk.NewTextBlock(b.Text))
			} else {
				note(i, false, "not sent: empty text, which the Messages API rejects")
			}
		case events.KindLLMText:
			if b.Text != "" {
				add(i, sdk.MessageParamRoleAssistant, sdk.NewTextBlock(b.Text))
			} else {
				note(i, false, "not sent: empty text, which the Messages API rejects")
			}
		case events.KindToolCall:
			if b.CallID == "" || b.ToolName == "" {
				return request{}, fmt.Errorf("block %d (%s): tool_call needs a call ID and a tool name", i, b.ID)
			}
			input := json.RawMessage(b.Arguments)
			if strings.TrimSpace(b.Arguments) == "" {
				input = json.RawMessage("{}")
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(input, &obj) != nil || obj == nil {
				return request{}, fmt.Errorf("block %d (%s): the tool call's arguments are not a JSON object, which tool_use input must be: %.80q", i, b.ID, b.Arguments)
			}
			add(i, sdk.MessageParamRoleAssistant, sdk.NewToolUseBlock(b.CallID, input, b.ToolName))
		case events.KindToolResult:
			if b.CallID == "" {
				return request{}, fmt.Errorf("block %d (%s): tool_result needs the call ID of its tool_call", i, b.ID)
			}
			res := sdk.ToolResultBlockParam{ToolUseID: b.CallID}
			if b.IsError {
				res.IsError = param.NewOpt(true)
			}
			if b.Text != "" {
				res.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: b.Text}}}
			}
			add(i, sdk.MessageParamRoleUser, sdk.ContentBlockParamUnion{OfToolResult: &res})
		case events.KindReasoning:
			thinking, err := thinkingParams(b)
			if errors.Is(err, errNotOurs) {
				// See the package documentation.
				note(i, false, "not sent: not thinking from the Messages API, so there is no signature the API could verify")
				continue
			}
			if err != nil {
				return request{}, fmt.Errorf("block %d (%s): %w", i, b.ID, err)
			}
			add(i, sdk.MessageParamRoleAssistant, thinking...)
			pending = i
		case events.KindOther:
			if !seenUser && b.Trust == events.Trusted {
				r.system = append(r.system, sdk.TextBlockParam{Text: b.Text})
				note(i, true, "sent in the top-level system field: trusted, before the first user message")
			} else {
				note(i, true, "sent as user text prefixed %q", summaryPrefix)
				// On the user's side, marked: after a compaction the
				// summary is the first conversation block, and a request
				// must begin with a user message; in an assistant
				// message it would also join the assistant turn after
				// it, whose thinking must come back as it was returned.
				add(i, sdk.MessageParamRoleUser, sdk.NewTextBlock(summaryPrefix+b.Text))
			}
		default:
			return request{}, fmt.Errorf("block %d (%s): kind %q has no Messages API rendering", i, b.ID, b.Kind)
		}
	}
	if pending >= 0 {
		return request{}, orphan(pending, "nothing")
	}
	flush()
	if len(r.messages) == 0 {
		return request{}, errors.New("the Turn has no block that becomes a message (system blocks go to the system field); append a user block first")
	}
	// Messages alternate by construction (add joins a side's consecutive
	// blocks into one message); the first must be the user's, as Bedrock,
	// Vertex and earlier versions of the Messages API require.
	if r.messages[0].Role != sdk.MessageParamRoleUser {
		return request{}, fmt.Errorf("block %d (%s): the conversation begins with the model's %s block, and the Messages API requires the first message to be the user's; "+
			"append a user block before it (or let compaction summarize what preceded it)", firstMessage, blocks[firstMessage].ID, blocks[firstMessage].Kind)
	}
	return r, nil
}

// tools declares specs as custom tools.
func tools(specs []engine.ToolSpec) ([]sdk.ToolUnionParam, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]sdk.ToolUnionParam, 0, len(specs))
	for _, s := range specs {
		if s.Name == "" {
			return nil, errors.New("a tool has no name; every ToolSpec needs one")
		}
		schema := sdk.ToolInputSchemaParam{Properties: map[string]any{}}
		if len(strings.TrimSpace(string(s.Parameters))) > 0 {
			var fields map[string]any
			if err := json.Unmarshal(s.Parameters, &fields); err != nil || fields == nil {
				return nil, fmt.Errorf("tool %q: parameters must be a JSON Schema object, got %.80q", s.Name, s.Parameters)
			}
			if t, ok := fields["type"]; ok && t != "object" {
				return nil, fmt.Errorf("tool %q: parameters must be a JSON Schema of type object, got type %v", s.Name, t)
			}
			delete(fields, "type")
			if p, ok := fields["properties"]; ok {
				schema.Properties = p
				delete(fields, "properties")
			}
			if req, ok := fields["required"].([]any); ok {
				for _, r := range req {
					if name, ok := r.(string); ok {
						schema.Required = append(schema.Required, name)
					}
				}
				delete(fields, "required")
			}
			if len(fields) > 0 {
				schema.ExtraFields = fields
			}
		}
		tool := &sdk.ToolParam{Name: s.Name, InputSchema: schema}
		if s.Description != "" {
			tool.Description = param.NewOpt(s.Description)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: tool})
	}
	return out, nil
}
