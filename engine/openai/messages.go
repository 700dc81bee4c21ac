package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// summaryPrefix marks an "other" block rendered as assistant content, so the
// model reads it as a record of earlier turns rather than as its own words.
const summaryPrefix = "[summary] "

// errorPrefix marks a failed tool result: a tool message has no error flag.
const errorPrefix = "error: "

// messages renders blocks as Chat Completions messages; the rules are in
// the package documentation. It only reads blocks. notes, when not nil,
// receives what became of the blocks the messages do not show plainly
// (see engine.BlockNote).
func messages(blocks []events.Block, notes *[]engine.BlockNote) ([]oai.ChatCompletionMessageParamUnion, error) {
	var (
		out []oai.ChatCompletionMessageParamUnion
		// The assistant message being built: consecutive llm_text and
		// tool_call blocks must become one message, because the API wants
		// all tool calls of a model turn in the message that the tool
		// messages answer.
		text     []string
		calls    []oai.ChatCompletionMessageToolCallUnionParam
		seenUser bool
		// first is the index of the block that opened the assistant
		// message being built (-1: none).
		first = -1
	)
	note := func(i int, sent bool, format string, args ...any) {
		if notes != nil {
			*notes = append(*notes, engine.BlockNote{Index: i, ID: blocks[i].ID, Sent: sent, Note: fmt.Sprintf(format, args...)})
		}
	}
	joined := func(i int) {
		if first < 0 {
			first = i
		} else {
			note(i, true, "merged into the assistant message of block %d (%s): a model turn's text and tool calls are one message", first, blocks[first].ID)
		}
	}
	assistant := func(i int, s string) { joined(i); text = append(text, s) }
	flush := func() {
		first = -1
		if len(text) == 0 && len(calls) == 0 {
			return
		}
		m := &oai.ChatCompletionAssistantMessageParam{ToolCalls: calls}
		if len(text) > 0 {
			m.Content.OfString = oai.String(strings.Join(text, "\n\n"))
		}
		out = append(out, oai.ChatCompletionMessageParamUnion{OfAssistant: m})
		text, calls = nil, nil
	}

	for i, b := range blocks {
		switch b.Kind {
		case events.KindSystem:
			flush()
			out = append(out, oai.SystemMessage(b.Text))
		case events.KindUser:
			flush()
			seenUser = true
			out = append(out, oai.UserMessage(b.Text))
		case events.KindLLMText:
			assistant(i, b.Text)
		case events.KindToolCall:
			if b.CallID == "" || b.ToolName == "" {
				return nil, fmt.Errorf("block %d (%s): tool_call needs a call ID and a tool name", i, b.ID)
			}
			args := b.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			joined(i)
			calls = append(calls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID: b.CallID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      b.ToolName,
						Arguments: args,
					},
				},
			})
		case events.KindToolResult:
			if b.CallID == "" {
				return nil, fmt.Errorf("block %d (%s): tool_result needs the call ID of its tool_call", i, b.ID)
			}
			flush()
			content := b.Text
			if b.IsError && !strings.HasPrefix(content, errorPrefix) {
				// Tools.Call already words its errors "error: ..."; say it once.
				content = errorPrefix + content
			}
			out = append(out, oai.ToolMessage(content, b.CallID))
		case events.KindReasoning:
			// Chat Completions has no input item for reasoning; see the
			// package documentation.
			note(i, false, "not sent: Chat Completions has no input for reasoning")
		case events.KindOther:
			if !seenUser && b.Trust == events.Trusted {
				flush()
				out = append(out, oai.SystemMessage(b.Text))
				note(i, true, "sent as a system message: trusted, before the first user message")
			} else {
				assistant(i, summaryPrefix+b.Text)
				note(i, true, "sent as assistant content prefixed %q", summaryPrefix)
			}
		default:
			// A kind this renderer does not know would be dropped silently,
			// and the model would answer a conversation nobody recorded.
			return nil, fmt.Errorf("block %d (%s): kind %q has no Chat Completions rendering", i, b.ID, b.Kind)
		}
	}
	flush()
	if len(out) == 0 {
		return nil, errors.New("the Turn has no block that becomes a message (reasoning is not sent); append a user or system block first")
	}
	return out, nil
}

// emptySchema is what a tool without parameters declares: some servers
// reject a function without a parameters object.
var emptySchema = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}

// tools declares specs as function tools.
func tools(specs []engine.ToolSpec) ([]oai.ChatCompletionToolUnionParam, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]oai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, s := range specs {
		if s.Name == "" {
			return nil, errors.New("a tool has no name; every ToolSpec needs one")
		}
		params := emptySchema
		if len(strings.TrimSpace(string(s.Parameters))) > 0 {
			params = nil
			if err := json.Unmarshal(s.Parameters, &params); err != nil || params == nil {
				return nil, fmt.Errorf("tool %q: parameters must be a JSON Schema object, got %.80q", s.Name, s.Parameters)
			}
		}
		fn := shared.FunctionDefinitionParam{Name: s.Name, Parameters: params}
		if s.Description != "" {
			fn.Description = oai.String(s.Description)
		}
		out = append(out, oai.ChatCompletionFunctionTool(fn))
	}
	return out, nil
}
