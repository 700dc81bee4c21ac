package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

// newEcho is example.echo: a model that answers with the last user
// message behind a prefix. Options:
//
//	example.echo:
//	  prefix: "echo: "
//
// A real engine calls its provider here; it gets the exact Turn the
// chain recorded the hash of, and returns blocks that the chain records.
func newEcho(s profile.EngineSpec) (engine.Engine, error) {
	opts := echoParams{Prefix: "echo: "}
	if err := s.Options.Decode(&opts); err != nil {
		return nil, err
	}
	return engine.EngineFunc(func(ctx context.Context, in engine.Input, delta func(engine.Delta)) (engine.Output, error) {
		if err := ctx.Err(); err != nil {
			return engine.Output{}, err
		}
		// Record the request before answering, as an HTTP engine's
		// transport would when sending it: which rendering, with what
		// parameters, and the body's hash.
		params, err := json.Marshal(opts)
		if err != nil {
			return engine.Output{}, err
		}
		req, body, _, err := renderEcho(opts, in.Turn)
		if err != nil {
			return engine.Output{}, err
		}
		engine.DescribeWire(ctx, echoWire, params)
		engine.RecordWireBody(ctx, body)

		text := req.Prefix + strings.TrimSpace(req.User)
		if delta != nil {
			delta(engine.Delta{Kind: events.KindLLMText, Text: text})
		}
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: text}}, StopReason: "stop"}, nil
	}), nil
}

// echoWire names example.echo's wire rendering; it would become
// "example.echo/2" if the request below changed, and this one would stay
// registered so that older calls still verify.
const echoWire = "example.echo/1"

// echoParams are example.echo's options, and what each call records
// besides the Turn (events.Wire's params): all its request depends on.
type echoParams struct {
	Prefix string `yaml:"prefix" json:"prefix"`
}

// echoRequest is example.echo's wire request. It sends nothing over a
// network, so, like the scripted engine, it defines its request: this
// JSON object, encoding/json's rendering, holding what it answers from.
type echoRequest struct {
	Prefix string `json:"prefix"`
	User   string `json:"user"`
}

// renderEcho makes the request of a call on turn: the live engine and
// `turnlog replay --wire` both use it, so the rendering cannot drift from
// what was sent. Every block but the last user message is not sent, and
// its note says so where `replay --inference N` shows the block.
func renderEcho(p echoParams, turn *projector.Turn) (echoRequest, []byte, []engine.BlockNote, error) {
	if turn == nil {
		return echoRequest{}, nil, nil, fmt.Errorf("example.echo: no Turn")
	}
	last := -1
	for i, b := range turn.Blocks {
		if b.Kind == events.KindUser {
			last = i
		}
	}
	req := echoRequest{Prefix: p.Prefix}
	var notes []engine.BlockNote
	for i, b := range turn.Blocks {
		if i == last {
			req.User = b.Text
			continue
		}
		notes = append(notes, engine.BlockNote{Index: i, ID: b.ID, Note: "not sent: example.echo reads only the last user message"})
	}
	body, err := json.Marshal(req)
	return req, body, notes, err
}

// renderEchoWire renders a recorded call's request again, from the
// parameters it recorded and its input Turn re-projected from the log;
// main registers it with the engine (profile.WithWire).
func renderEchoWire(_ context.Context, params []byte, turn *projector.Turn) ([]byte, []engine.BlockNote, error) {
	var p echoParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("example.echo: the recorded wire parameters are not this engine's: %w", err)
	}
	_, body, notes, err := renderEcho(p, turn)
	return body, notes, err
}
