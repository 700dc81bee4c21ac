package main

import (
	"context"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
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
	opts := struct {
		Prefix string `yaml:"prefix"`
	}{Prefix: "echo: "}
	if err := s.Options.Decode(&opts); err != nil {
		return nil, err
	}
	return engine.EngineFunc(func(ctx context.Context, in engine.Input, delta func(engine.Delta)) (engine.Output, error) {
		if err := ctx.Err(); err != nil {
			return engine.Output{}, err
		}
		var last string
		for _, b := range in.Turn.Blocks {
			if b.Kind == events.KindUser {
				last = b.Text
			}
		}
		text := opts.Prefix + strings.TrimSpace(last)
		if delta != nil {
			delta(engine.Delta{Kind: events.KindLLMText, Text: text})
		}
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: text}}, StopReason: "stop"}, nil
	}), nil
}
