package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// Block metadata this engine writes on the blocks it returns. They are
// part of the block, so the input hash and replay --verify cover them.
const (
	// MetaItemID is the output item's ID ("rs_...", "msg_...", "fc_...").
	MetaItemID = "responses.item_id"
	// MetaSummary is a reasoning item's summary parts, as a JSON array of
	// strings, exactly as returned (Block.Text joins them for display).
	MetaSummary = "responses.summary"
	// MetaContent is a reasoning item's reasoning_text parts, as a JSON
	// array of strings, when the server returned any.
	MetaContent = "responses.content"
	// MetaPhase is an assistant message's phase ("commentary",
	// "final_answer"), which the API wants back on later calls.
	MetaPhase = "responses.phase"
)

const (
	summaryPrefix = "[summary] "
	errorPrefix   = "error: "
)

// render turns blocks into input items; the rules are in the package
// documentation. It only reads blocks. notes, when not nil, receives what
// became of the blocks the items do not show plainly (engine.BlockNote).
func render(blocks []events.Block, notes *[]engine.BlockNote) (responses.ResponseInputParam, error) {
	note := func(i int, sent bool, text string) {
		if notes != nil {
			*notes = append(*notes, engine.BlockNote{Index: i, ID: blocks[i].ID, Sent: sent, Note: text})
		}
	}
	var (
		out      responses.ResponseInputParam
		seenUser bool
		// pending is the index (in blocks) of the reasoning item just
		// rendered, until the item after it shows it has its follower.
		pending = -1
	)
	message := func(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role:    role,
			Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(text)},
		}}
	}
	orphan := func(i int, follower string) error {
		return fmt.Errorf("block %d (%s): reasoning is followed by %s, not by the message or function call it produced; "+
			"the Responses API rejects that input (add reasoningguard_repair to the profile's middlewares to drop such blocks)",
			i, blocks[i].ID, follower)
	}
	for i, b := range blocks {
		var item *responses.ResponseInputItemUnionParam
		follows := false // whether item may follow a reasoning item
		switch b.Kind {
		case events.KindSystem:
			m := message(responses.EasyInputMessageRoleSystem, b.Text)
			item = &m
		case events.KindUser:
			seenUser = true
			m := message(responses.EasyInputMessageRoleUser, b.Text)
			item = &m
		case events.KindLLMText:
			m := message(responses.EasyInputMessageRoleAssistant, b.Text)
			if p := b.Meta[MetaPhase]; p != "" {
				m.OfMessage.Phase = responses.EasyInputMessagePhase(p)
			}
			if id := b.Meta[MetaItemID]; id != "" && pending >= 0 {
				m = outputMessage(id, b)
			}
			item, follows = &m, true
		case events.KindToolCall:
			if b.CallID == "" || b.ToolName == "" {
				return nil, fmt.Errorf("block %d (%s): tool_call needs a call ID and a tool name", i, b.ID)
			}
			args := b.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			call := &responses.ResponseFunctionToolCallParam{CallID: b.CallID, Name: b.ToolName, Arguments: args}
			if id := b.Meta[MetaItemID]; id != "" && pending >= 0 {
				call.ID, call.Status = param.NewOpt(id), responses.ResponseFunctionToolCallStatusCompleted
			}
			item = &responses.ResponseInputItemUnionParam{OfFunctionCall: call}
			follows = true
		case events.KindToolResult:
			if b.CallID == "" {
				return nil, fmt.Errorf("block %d (%s): tool_result needs the call ID of its tool_call", i, b.ID)
			}
			text := b.Text
			if b.IsError && !strings.HasPrefix(text, errorPrefix) {
				text = errorPrefix + text
			}
			item = &responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: param.NewOpt(b.CallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(text)},
			}}
		case events.KindReasoning:
			r, ok, err := reasoningItem(b)
			if err != nil {
				return nil, fmt.Errorf("block %d (%s): %w", i, b.ID, err)
			}
			if !ok {
				// Not ours: see the package documentation.
				note(i, false, "not sent: no reasoning item ID and encrypted content from the Responses API, so the API could not verify it")
				continue
			}
			if pending >= 0 {
				return nil, orphan(pending, "another reasoning item")
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: r})
			pending = i
			continue
		case events.KindOther:
			var m responses.ResponseInputItemUnionParam
			if !seenUser && b.Trust == events.Trusted {
				m = message(responses.EasyInputMessageRoleSystem, b.Text)
				note(i, true, "sent as a system message: trusted, before the first user message")
			} else {
				m = message(responses.EasyInputMessageRoleAssistant, summaryPrefix+b.Text)
				note(i, true, "sent as an assistant message prefixed "+strconv.Quote(summaryPrefix))
			}
			item = &m
		default:
			return nil, fmt.Errorf("block %d (%s): kind %q has no Responses API rendering", i, b.ID, b.Kind)
		}
		if pending >= 0 {
			if !follows {
				return nil, orphan(pending, "a "+string(b.Kind)+" block")
			}
			pending = -1
		}
		out = append(out, *item)
	}
	if pending >= 0 {
		return nil, orphan(pending, "nothing")
	}
	if len(out) == 0 {
		return nil, errors.New("the Turn has no block that becomes an input item; append a user or system block first")
	}
	return out, nil
}

// outputMessage is an assistant message sent back as the output item it
// was, with its ID and status: the follower of a reasoning item, which the
// API pairs with that item by the follower's ID.
func outputMessage(id string, b events.Block) responses.ResponseInputItemUnionParam {
	m := &responses.ResponseOutputMessageParam{
		ID:     id,
		Status: responses.ResponseOutputMessageStatusCompleted,
		Content: []responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{
			Text: b.Text, Annotations: []responses.ResponseOutputTextAnnotationUnionParam{},
		}}},
	}
	if p := b.Meta[MetaPhase]; p != "" {
		m.Phase = responses.ResponseOutputMessagePhase(p)
	}
	return responses.ResponseInputItemUnionParam{OfOutputMessage: m}
}

// reasoningItem rebuilds the reasoning item a block stores. ok is false for
// a reasoning block that this engine did not write (no item ID or no
// encrypted content): the API could not verify it, so it is not sent.
func reasoningItem(b events.Block) (*responses.ResponseReasoningItemParam, bool, error) {
	id := b.Meta[MetaItemID]
	if id == "" || b.Encrypted == "" {
		return nil, false, nil
	}
	summary, err := parts(b.Meta[MetaSummary], MetaSummary)
	if err != nil {
		return nil, false, err
	}
	r := &responses.ResponseReasoningItemParam{
		ID:               id,
		EncryptedContent: param.NewOpt(b.Encrypted),
		// Never nil: the API requires the summary array, even empty.
		Summary: make([]responses.ResponseReasoningItemSummaryParam, 0, len(summary)),
	}
	for _, s := range summary {
		r.Summary = append(r.Summary, responses.ResponseReasoningItemSummaryParam{Text: s})
	}
	if raw, ok := b.Meta[MetaContent]; ok {
		content, err := parts(raw, MetaContent)
		if err != nil {
			return nil, false, err
		}
		for _, s := range content {
			r.Content = append(r.Content, responses.ResponseReasoningItemContentParam{Text: s})
		}
	}
	return r, true, nil
}

// parts decodes a JSON array of strings stored in metadata.
func parts(raw, key string) ([]string, error) {
	if raw == "" {
		return nil, fmt.Errorf("reasoning metadata %s is missing; the block cannot be sent back as the API returned it", key)
	}
	var out []string
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("reasoning metadata %s is not a JSON array of strings: %v", key, err)
	}
	return out, nil
}

// tools declares specs as function tools. strict is false: turnlog's tool
// schemas are not written for strict mode, which the API would otherwise
// assume and enforce.
func tools(specs []engine.ToolSpec) ([]responses.ToolUnionParam, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]responses.ToolUnionParam, 0, len(specs))
	for _, s := range specs {
		if s.Name == "" {
			return nil, errors.New("a tool has no name; every ToolSpec needs one")
		}
		params := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(strings.TrimSpace(string(s.Parameters))) > 0 {
			params = nil
			if err := json.Unmarshal(s.Parameters, &params); err != nil || params == nil {
				return nil, fmt.Errorf("tool %q: parameters must be a JSON Schema object, got %.80q", s.Name, s.Parameters)
			}
		}
		fn := &responses.FunctionToolParam{Name: s.Name, Parameters: params, Strict: param.NewOpt(false)}
		if s.Description != "" {
			fn.Description = param.NewOpt(s.Description)
		}
		out = append(out, responses.ToolUnionParam{OfFunction: fn})
	}
	return out, nil
}
