package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/projector"
)

// WireVersion names this engine's rendering of a Turn as a Chat
// Completions request (the rules in the package documentation and
// docs/wire.md); it changes whenever the rendering does.
const WireVersion = "openai-chat/1"

// wireParams is what a call records besides its Turn (events.Wire.Params):
// all the request's body depends on. The base URL and the key are not: they
// are not in the body, and the key is a secret.
type wireParams struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream,omitempty"`
	Tools  []engine.ToolSpec `json:"tools,omitempty"`
}

func describeWire(ctx context.Context, p wireParams) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("openai: wire parameters: %w", err)
	}
	engine.DescribeWire(ctx, WireVersion, raw)
	return nil
}

// RenderWire renders a recorded call's request body again, from the
// parameters it recorded and its input Turn, with this engine's code and
// the SDK's serialisation, through a transport that keeps the body and
// sends nothing. It returns the body and what became of the blocks the
// body does not show plainly (reasoning not sent, blocks merged).
func RenderWire(ctx context.Context, params []byte, turn *projector.Turn) ([]byte, []engine.BlockNote, error) {
	var p wireParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("openai: the recorded wire parameters are not this engine's: %w", err)
	}
	var notes []engine.BlockNote
	if _, err := messages(turn.Blocks, &notes); err != nil {
		return nil, nil, fmt.Errorf("openai: render turn: %w", err)
	}
	e, err := New(Config{Model: p.Model, Stream: p.Stream, HTTPClient: &http.Client{Transport: engine.NotSending()}})
	if err != nil {
		return nil, nil, err
	}
	body, err := engine.RenderRequest(ctx, e, engine.Input{Turn: turn, Model: p.Model, Tools: p.Tools})
	if err != nil {
		return nil, nil, err
	}
	return body, notes, nil
}
