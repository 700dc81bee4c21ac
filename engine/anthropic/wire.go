package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/projector"
)

// WireVersion names this engine's rendering of a Turn as a Messages API
// request (the rules in the package documentation and docs/wire.md); it
// changes whenever the rendering does.
const WireVersion = "anthropic-messages/1"

// wireParams is what a call records besides its Turn (events.Wire.Params):
// all the request's body depends on. The base URL and the key are not in
// the body.
type wireParams struct {
	Model     string            `json:"model"`
	Stream    bool              `json:"stream,omitempty"`
	MaxTokens int               `json:"max_tokens,omitempty"`
	Thinking  Thinking          `json:"thinking"`
	Tools     []engine.ToolSpec `json:"tools,omitempty"`
}

func (e *Engine) describeWire(ctx context.Context, model string, tools []engine.ToolSpec) error {
	raw, err := json.Marshal(wireParams{Model: model, Stream: e.cfg.Stream, MaxTokens: e.cfg.MaxTokens, Thinking: e.cfg.Thinking, Tools: tools})
	if err != nil {
		return fmt.Errorf("anthropic: wire parameters: %w", err)
	}
	engine.DescribeWire(ctx, WireVersion, raw)
	return nil
}

// RenderWire renders a recorded call's request body again, from the
// parameters it recorded and its input Turn, with this engine's code and
// the SDK's serialisation, through a transport that keeps the body and
// sends nothing. It returns the body and what became of the blocks the
// body does not show plainly (system blocks in the system field, blocks
// merged into one message, blocks not sent).
func RenderWire(ctx context.Context, params []byte, turn *projector.Turn) ([]byte, []engine.BlockNote, error) {
	var p wireParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("anthropic: the recorded wire parameters are not this engine's: %w", err)
	}
	var notes []engine.BlockNote
	if _, err := render(turn.Blocks, &notes); err != nil {
		return nil, nil, fmt.Errorf("anthropic: render turn: %w", err)
	}
	e, err := New(Config{Model: p.Model, Stream: p.Stream, MaxTokens: p.MaxTokens, Thinking: p.Thinking,
		HTTPClient: &http.Client{Transport: engine.NotSending()}})
	if err != nil {
		return nil, nil, err
	}
	body, err := engine.RenderRequest(ctx, e, engine.Input{Turn: turn, Model: p.Model, Tools: p.Tools})
	if err != nil {
		return nil, nil, err
	}
	return body, notes, nil
}
