package profile

import (
	"regexp"

	"github.com/turnlog/turnlog/engine"
)

// An engine's wire rendering is part of what registers it: the binary
// that can build an engine from a profile can also render the requests
// that engine recorded (`turnlog replay --inference N --wire`, and the
// wire hashes `replay --verify` checks), including the calls of a custom
// build's own engines. See docs/wire.md and docs/library.md.

// EngineOption is an optional setting of RegisterEngine.
type EngineOption func(*engineOptions)

type engineOptions struct {
	wires    []wireRendering
	defaults func() (baseURL, model string)
}

// wireRendering is one registered rendering: its version, the function
// that renders it and the engine that registered it.
type wireRendering struct {
	version string
	render  engine.WireRenderFunc
	engine  string
}

// validWireVersion is what a rendering version may be: "<name>/<n>", the
// name lowercase words joined by '.', '_' or '-' as engine names are, the
// number bumped whenever the engine renders a Turn differently.
var validWireVersion = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*/[0-9]+$`)

// WithWire registers render as the renderer of the engine's wire
// requests of rendering version (what the engine passes to
// engine.DescribeWire for each call, e.g. "acme.gpt/1"). Give it once per
// version the engine has ever recorded: a rendering that changes gets a
// new version, and the old one keeps its renderer so that older calls
// still verify. A version is registered by one engine only;
// RegisterEngine panics on a version registered twice, one that is not
// "<name>/<number>", or a nil render.
func WithWire(version string, render engine.WireRenderFunc) EngineOption {
	return func(o *engineOptions) {
		o.wires = append(o.wires, wireRendering{version: version, render: render})
	}
}

// WireRenderers returns the wire renderers the engines of this binary
// registered (WithWire), by rendering version: what engine/wire renders
// recorded calls with. Like a profile lookup, it ends registration.
func WireRenderers() map[string]engine.WireRenderFunc {
	registered.mu.Lock()
	defer registered.mu.Unlock()
	registered.frozen = true
	out := make(map[string]engine.WireRenderFunc, len(registered.wires))
	for v, w := range registered.wires {
		out[v] = w.render
	}
	return out
}
