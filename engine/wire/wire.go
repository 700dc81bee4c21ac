// Package wire renders the request of a recorded model call again, with
// the engine that made it: the rendering version its closing event
// recorded (events.Wire) names the renderer, the recorded parameters and
// the input Turn re-projected from the log are what it renders from, and
// the engine's own code and SDK serialise the body, through a transport
// that keeps it and sends nothing. `turnlog replay --wire` prints that body
// and `replay --verify` checks its hash.
//
// The renderers are those the binary's engines registered with their
// engine (profile.RegisterEngine with profile.WithWire): turnlog's own,
// where imported (cli imports them all through engine/builtin), and a
// custom build's. This package links no engine itself, so package replay,
// which defines the small interface Renderer implements
// (replay.WireRenderer), links no provider SDK either.
package wire

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

// RenderFunc renders a call's request again from its recorded parameters
// and input Turn: the body, and what became of the blocks it does not
// show plainly. It is engine.WireRenderFunc, the type engines register.
type RenderFunc = engine.WireRenderFunc

// Renderer renders the calls of the renderings it knows; the zero value
// is of no use, New returns one.
type Renderer struct {
	known map[string]RenderFunc
}

// New returns a Renderer that knows the renderings the engines of this
// binary registered (profile.WireRenderers) and, in addition, those in
// extra, by rendering version (an extra one replaces a registered one of
// the same version, for a test or a tool that renders differently).
func New(extra map[string]RenderFunc) *Renderer {
	r := &Renderer{known: profile.WireRenderers()}
	maps.Copy(r.known, extra)
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
		known := slices.Sorted(maps.Keys(r.known))
		return nil, nil, fmt.Errorf("%w %q: this binary renders %s; the call was made by an engine this binary does not register with its rendering (build one that imports it: see docs/library.md)",
			engine.ErrUnknownRendering, w.Version, orNone(strings.Join(known, ", ")))
	}
	if input == nil {
		return nil, nil, fmt.Errorf("the call's input is not in the log, so its request cannot be rendered again")
	}
	return f(ctx, []byte(w.Params), input)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
