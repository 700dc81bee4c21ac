package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// output turns a finished response into blocks, in the order of its output
// items (see the package documentation).
func output(resp *responses.Response) (engine.Output, error) {
	out := engine.Output{
		StopReason:    string(resp.Status),
		ResponseID:    resp.ID,
		ResponseModel: string(resp.Model),
		Usage: engine.Usage{
			PromptTokens:     int(resp.Usage.InputTokens),
			CompletionTokens: int(resp.Usage.OutputTokens),
		},
	}
	if r := resp.IncompleteDetails.Reason; r != "" {
		out.StopReason += ": " + string(r)
	}
	for i, item := range resp.Output {
		b, err := block(item)
		if err != nil {
			return engine.Output{}, fmt.Errorf("output item %d: %w", i, err)
		}
		out.Blocks = append(out.Blocks, b)
	}
	return out, nil
}

// block converts one output item. A message without text is kept as an
// empty llm_text block: it is the follower of the reasoning before it.
func block(item responses.ResponseOutputItemUnion) (events.Block, error) {
	meta := map[string]string{}
	if item.ID != "" {
		meta[MetaItemID] = item.ID
	}
	switch item.Type {
	case "reasoning":
		r := item.AsReasoning()
		if r.ID == "" {
			return events.Block{}, fmt.Errorf("a reasoning item has no id; it could not be sent back")
		}
		summary := make([]string, len(r.Summary))
		for i, s := range r.Summary {
			summary[i] = s.Text
		}
		meta[MetaSummary] = jsonStrings(summary)
		text := strings.Join(summary, "\n\n")
		if len(r.Content) > 0 {
			content := make([]string, len(r.Content))
			for i, c := range r.Content {
				content[i] = c.Text
			}
			meta[MetaContent] = jsonStrings(content)
			if text == "" {
				text = strings.Join(content, "\n\n")
			}
		}
		return events.Block{Kind: events.KindReasoning, Text: text, Encrypted: r.EncryptedContent, Meta: meta}, nil
	case "message":
		m := item.AsMessage()
		var text, refusal strings.Builder
		for _, c := range m.Content {
			switch c.Type {
			case "output_text":
				text.WriteString(c.Text)
			case "refusal":
				refusal.WriteString(c.Refusal)
			}
		}
		s := text.String()
		if s == "" {
			s = refusal.String() // the model's answer too; dropping it would leave none
		}
		if m.Phase != "" {
			meta[MetaPhase] = string(m.Phase)
		}
		return events.Block{Kind: events.KindLLMText, Text: s, Meta: meta}, nil
	case "function_call":
		fc := item.AsFunctionCall()
		if fc.CallID == "" || fc.Name == "" {
			return events.Block{}, fmt.Errorf("a function_call item has no call_id or name")
		}
		return events.Block{Kind: events.KindToolCall, CallID: fc.CallID, ToolName: fc.Name, Arguments: fc.Arguments, Meta: meta}, nil
	}
	return events.Block{}, fmt.Errorf("the model returned a %q item; turnlog declares only function tools and records reasoning, messages and function calls", item.Type)
}

// jsonStrings encodes strings as a JSON array; it cannot fail.
func jsonStrings(s []string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}
