package anthropic

import (
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// output turns a message into blocks in the order of its content: each run
// of thinking blocks one reasoning block (see thinkingBlock), each text
// block an llm_text block, each tool_use block a tool_call block.
func output(m *sdk.Message) (engine.Output, error) {
	out := engine.Output{
		StopReason:    string(m.StopReason),
		ResponseID:    m.ID,
		ResponseModel: string(m.Model),
		Usage: engine.Usage{
			PromptTokens:     int(m.Usage.InputTokens + m.Usage.CacheCreationInputTokens + m.Usage.CacheReadInputTokens),
			CompletionTokens: int(m.Usage.OutputTokens),
		},
	}
	var run []sdk.ContentBlockUnion
	endRun := func() error {
		if len(run) == 0 {
			return nil
		}
		b, err := thinkingBlock(run)
		if err != nil {
			return err
		}
		out.Blocks = append(out.Blocks, b)
		run = nil
		return nil
	}
	for i, c := range m.Content {
		switch c.Type {
		case "thinking", "redacted_thinking":
			run = append(run, c)
			continue
		}
		if err := endRun(); err != nil {
			return engine.Output{}, fmt.Errorf("content block %d: %w", i, err)
		}
		switch c.Type {
		case "text":
			out.Blocks = append(out.Blocks, events.Block{Kind: events.KindLLMText, Text: c.Text})
		case "tool_use":
			if c.ID == "" || c.Name == "" {
				return engine.Output{}, fmt.Errorf("content block %d: a tool_use block has no id or name", i)
			}
			args := string(c.Input)
			if args == "" {
				args = "{}"
			}
			out.Blocks = append(out.Blocks, events.Block{Kind: events.KindToolCall, CallID: c.ID, ToolName: c.Name, Arguments: args})
		default:
			return engine.Output{}, fmt.Errorf("content block %d: the model returned a %q block; turnlog declares only custom tools and records thinking, text and tool_use", i, c.Type)
		}
	}
	// Thinking at the very end (the answer was cut at max_tokens) is kept:
	// nothing vanishes, and the reasoning guard decides what to do with it.
	if err := endRun(); err != nil {
		return engine.Output{}, err
	}
	return out, nil
}
