package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/projector"
)

// WireVersion names this engine's rendering of a Turn as a Responses API
// request (the rules in the package documentation and docs/wire.md); it
// changes whenever the rendering does.
const WireVersion = "openai-responses/1"

// wireParams is what a call records besides its Turn (events.Wire.Params):
// all the request's body depends on. The base URL and the key are not in
// the body.
type wireParams struct {
	Model            string            `json:"model"`
	Stream           bool              `json:"stream,omitempty"`
	MaxOutputTokens  int               `json:"max_output_tokens,omitempty"`
	ReasoningEffort  string            `json:"reasoning_effort,omitempty"`
	ReasoningSummary string            `json:"reasoning_summary,omitempty"`
	Tools            []engine.ToolSpec `json:"tools,omitempty"`
}

func (e *Engine) describeWire(ctx context.Context, model string, tools []engine.ToolSpec) error {
	raw, err := json.Marshal(wireParams{Model: model, Stream: e.cfg.Stream, MaxOutputTokens: e.cfg.MaxOutputTokens,
		ReasoningEffort: e.cfg.ReasoningEffort, ReasoningSummary: e.cfg.ReasoningSummary, Tools: tools})
	if err != nil {
		return fmt.Errorf("openai_responses: wire parameters: %w", err)
	}
	engine.DescribeWire(ctx, WireVersion, raw)
	return nil
}

// RenderWire renders a recorded call's request body again, from the
// parameters it recorded and its input Turn, with this engine's code and
// the SDK's serialisation, through a transport that keeps the body and
// sends nothing. It returns the body and what became of the blocks the
// body does not show plainly (reasoning not sent, summaries).
func RenderWire(ctx context.Context, params []byte, turn *projector.Turn) ([]byte, []engine.BlockNote, error) {
	var p wireParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("openai_responses: the recorded wire parameters are not this engine's: %w", err)
	}
	var notes []engine.BlockNote
	if _, err := render(turn.Blocks, &notes); err != nil {
		return nil, nil, fmt.Errorf("openai_responses: render turn: %w", err)
	}
	e, err := New(Config{Model: p.Model, Stream: p.Stream, MaxOutputTokens: p.MaxOutputTokens, ReasoningEffort: p.ReasoningEffort,
		ReasoningSummary: p.ReasoningSummary, HTTPClient: &http.Client{Transport: engine.NotSending()}})
	if err != nil {
		return nil, nil, err
	}
	body, err := engine.RenderRequest(ctx, e, engine.Input{Turn: turn, Model: p.Model, Tools: p.Tools})
	if err != nil {
		return nil, nil, err
	}
	return body, notes, nil
}
