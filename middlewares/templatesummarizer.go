package middlewares

// This file holds the summarizer of a compaction that runs inside
// TemplatePrompt: it rebuilds the template's prompt.

import (
	"context"
	"errors"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// TemplateSummarizer is the Summarizer of a Compaction that runs inside
// TemplatePrompt. A compaction is the one moment a conversation's prompt is
// built again: the cached prompt prefix is lost anyway, since the history
// after it changes. So before each summary it renders the template again
// with fresh values (the current global template, or the conversation's
// own with TemplatePromptConfig.KeepTemplate), asks Engine for the summary with that
// prompt followed by Instructions as the summarizing call's system prompt
// (the model summarizing knows what the conversation is for), and once the
// summary is written records the new prompt: systemprompt.replaced with
// the template's hash and text, the previous template's hash, the fresh
// values and Reason "compaction", in the same step as the turn.compacted
// that follows. The stored prompt never
// contains the instructions: they are for the summarizing call only.
//
// Like EngineSummarizer, the summarizing call is made with
// engine.WithPurpose(ctx, "compaction") and recorded as an inference of
// the conversation, whose provenance names the template.
type TemplateSummarizer struct {
	// Engine writes the summary (required).
	Engine engine.Engine
	// Model to ask ("" for the engine's default).
	Model string
	// Instructions say how to summarize (default
	// DefaultSummaryInstruction); they follow the prompt, after a blank
	// line.
	Instructions string
}

// Summarize implements Summarizer.
func (s TemplateSummarizer) Summarize(ctx context.Context, tx *engine.Tx, blocks []events.Block) (string, error) {
	p, ok := ctx.Value(templatePromptKey{}).(*templatePrompt)
	if !ok {
		return "", errors.New("template summarizer: the template middleware did not run before compaction; put TemplatePrompt (profile middleware \"template\") before Compaction in the chain")
	}
	instructions := s.Instructions
	if instructions == "" {
		instructions = DefaultSummaryInstruction
	}
	r, rebuilt, err := p.rebuild(ctx)
	if err != nil {
		return "", err
	}
	var (
		from  string
		spans []events.Span
	)
	if r.ok {
		// The prompt comes first: its spans hold as they are.
		instructions = r.prompt + "\n\n" + instructions
		from, spans = r.hash, r.spans
	}
	summary, err := EngineSummarizer{Engine: s.Engine, Model: s.Model, Instruction: instructions, TemplateHash: from,
		InstructionSpans: spans}.Summarize(ctx, tx, blocks)
	if err != nil {
		return "", err
	}
	if rebuilt {
		if err := p.record(r); err != nil {
			return "", err
		}
	}
	return summary, nil
}
