package replay

import (
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// isAside reports whether p records a model call whose input was not the
// conversation's Turn but built from part of it (engine.InferAside: a
// compaction's summary), which it says how to rebuild.
func isAside(p events.InferenceStarted) bool {
	return p.Instructions != "" || len(p.InputBlocks) > 0
}

// asideInput rebuilds the input of such a call from t, the conversation's
// Turn when the call was recorded, and describes the call's system prompt:
// its instructions, recorded by the inference.started at position n, with
// the template they were rendered from and its untrusted spans. The error
// says what the log does not hold.
func asideInput(t *projector.Turn, p events.InferenceStarted, n int) (*projector.Turn, *ActivePrompt, error) {
	blocks := make([]events.Block, 0, len(p.InputBlocks))
	for _, id := range p.InputBlocks {
		b, ok := t.Block(id)
		if !ok {
			return nil, nil, fmt.Errorf("input block %s is not in the conversation at this point", safe(id))
		}
		blocks = append(blocks, b)
	}
	var in *projector.Turn
	switch p.Purpose {
	case middlewares.PurposeCompaction:
		in = middlewares.SummaryInput(p.Instructions, blocks)
	default:
		return nil, nil, fmt.Errorf("purpose %s: this turnlog does not know how the input of such a call is built; check it with the turnlog that recorded it, or a newer one",
			quote(p.Purpose))
	}
	var prompt *ActivePrompt
	if sp, i, ok := in.SystemPrompt(); ok {
		prompt = &ActivePrompt{ID: sp.ID, Index: i, Text: sp.Text, Hash: projector.HashText(sp.Text),
			Source: p.Purpose, Trust: sp.Trust, TemplateHash: p.TemplateHash, Untrusted: p.Untrusted,
			SetAt: n, SetBy: events.TypeInferenceStarted}
	}
	return in, prompt, nil
}
