// Package wire renders the request of a recorded model call again, with
// the engine that made it: the rendering version its closing event
// recorded (events.Wire) names the engine, the recorded parameters and the
// input Turn re-projected from the log are what it renders from, and the
// engine's own code and SDK serialise the body, through a transport that
// keeps it and sends nothing. `turnlog replay --wire` prints that body and
// `replay --verify` checks its hash; this package is apart from package
// replay so that replay needs no provider SDK (it defines the small
// interface, replay.WireRenderer, that Renderer implements).
package wire

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/anthropic"
	"github.com/turnlog/turnlog/engine/openai"
	"github.com/turnlog/turnlog/engine/responses"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// RenderFunc renders a call's request again from its recorded parameters
// and input Turn: the body, and what became of the blocks it does not
// show plainly.
type RenderFunc func(ctx context.Context, params []byte, input *projector.Turn) ([]byte, []engine.BlockNote, error)

// Renderer renders the calls of the renderings it knows; the zero value
// is of no use, New returns one that knows turnlog's engines.
type Renderer struct {
	known map[string]RenderFunc
}

// New returns a Renderer that knows the renderings of turnlog's engines
// and, in addition, those in extra (a program's own engines, by their
// rendering version).
func New(extra map[string]RenderFunc) *Renderer {
	r := &Renderer{known: map[string]RenderFunc{
		scripted.WireVersion: func(_ context.Context, params []byte, in *projector.Turn) ([]byte, []engine.BlockNote, error) {
			body, err := scripted.RenderWire(params, in)
			return body, nil, err
		},
		openai.WireVersion:    openai.RenderWire,
		responses.WireVersion: responses.RenderWire,
		anthropic.WireVersion: anthropic.RenderWire,
	}}
	for v, f := range extra {
		r.known[v] = f
	}
	return r
}

// Knows reports whether r can render version.
func (r *Renderer) Knows(version string) bool {
	_, ok := r.known[version]
	return ok
}

// RenderWire renders the call that recorded w, whose input was input.
func (r *Renderer) RenderWire(ctx context.Context, w events.Wire, input *projector.Turn) ([]byte, []engine.BlockNote, error) {
	f, ok := r.known[w.Version]
	if !ok {
		known := make([]string, 0, len(r.known))
		for v := range r.known {
			known = append(known, v)
		}
		slices.Sort(known)
		return nil, nil, fmt.Errorf("%w %q: this turnlog renders %s", engine.ErrUnknownRendering, w.Version, strings.Join(known, ", "))
	}
	if input == nil {
		return nil, nil, fmt.Errorf("the call's input is not in the log, so its request cannot be rendered again")
	}
	return f(ctx, []byte(w.Params), input)
}
