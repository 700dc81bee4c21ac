package scripted

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// WireVersion names the scripted engine's wire rendering (see Wire); it
// changes whenever the rendering does.
const WireVersion = "scripted/1"

// The scripted engine sends nothing over a network, so its wire request is
// defined here: the input it is handed, rendered as one JSON object by
// encoding/json (fields in this order, no spaces, HTML characters escaped
// as encoding/json does):
//
//	{"model": the model asked for ("" for none),
//	 "blocks": [{"kind", "text", "call_id", "tool", "arguments", "is_error"}
//	            for every block of the Turn, in order; empty fields omitted],
//	 "tools": [{"name", "description", "parameters"}], omitted when none}
//
// Every block is listed, reasoning included: it is what a model in the
// engine's place receives. The engine itself reads only the last user
// block and the tool results after it. Block IDs, trust and metadata are
// not part of it: no model receives them.
type wireRequest struct {
	Model  string            `json:"model"`
	Blocks []wireBlock       `json:"blocks"`
	Tools  []engine.ToolSpec `json:"tools,omitempty"`
}

type wireBlock struct {
	Kind      events.Kind `json:"kind"`
	Text      string      `json:"text,omitempty"`
	CallID    string      `json:"call_id,omitempty"`
	Tool      string      `json:"tool,omitempty"`
	Arguments string      `json:"arguments,omitempty"`
	IsError   bool        `json:"is_error,omitempty"`
}

// wireParams is what a call records besides the Turn: its model and tools.
type wireParams struct {
	Model string            `json:"model"`
	Tools []engine.ToolSpec `json:"tools,omitempty"`
}

// Wire renders in as the scripted engine's wire request (see WireVersion).
func Wire(in engine.Input) ([]byte, error) {
	if in.Turn == nil {
		return nil, fmt.Errorf("scripted: input has no Turn")
	}
	req := wireRequest{Model: in.Model, Blocks: make([]wireBlock, len(in.Turn.Blocks)), Tools: in.Tools}
	for i, b := range in.Turn.Blocks {
		req.Blocks[i] = wireBlock{Kind: b.Kind, Text: b.Text, CallID: b.CallID, Tool: b.ToolName, Arguments: b.Arguments, IsError: b.IsError}
	}
	return json.Marshal(req)
}

// record describes the call and records its wire request.
func record(ctx context.Context, in engine.Input) error {
	params, err := json.Marshal(wireParams{Model: in.Model, Tools: in.Tools})
	if err != nil {
		return fmt.Errorf("scripted: wire parameters: %w", err)
	}
	body, err := Wire(in)
	if err != nil {
		return err
	}
	engine.DescribeWire(ctx, WireVersion, params)
	engine.RecordWireBody(ctx, body)
	return nil
}

// RenderWire renders a recorded call's wire request again from the
// parameters it recorded and its input Turn.
func RenderWire(params []byte, turn *projector.Turn) ([]byte, error) {
	var p wireParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("scripted: the recorded wire parameters are not this engine's: %w", err)
	}
	return Wire(engine.Input{Turn: turn, Model: p.Model, Tools: p.Tools})
}
