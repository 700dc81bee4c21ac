package scripted

import (
	"context"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

// The scripted engine is a profile's provider "scripted" (the default)
// in every binary that imports this package, and renders its recorded
// requests again (WireVersion) for `turnlog replay --wire` and `--verify`.
func init() {
	profile.RegisterEngine(profile.ProviderScripted, fromProfile, profile.WithWire(WireVersion, renderWire),
		profile.WithDefaults(func() (string, string) { return "", "scripted" }))
}

// renderWire is RenderWire as profile.WithWire takes it: the scripted
// engine's request shows every block plainly, so it has no notes.
func renderWire(_ context.Context, params []byte, turn *projector.Turn) ([]byte, []engine.BlockNote, error) {
	body, err := RenderWire(params, turn)
	return body, nil, err
}

// fromProfile is the engine of a profile with provider: scripted: the
// profile's script file, or DefaultScript without one.
func fromProfile(s profile.EngineSpec) (engine.Engine, error) {
	if err := s.Options.RequireNone(); err != nil {
		return nil, err
	}
	if s.Profile.Script == "" {
		if s.CheckOnly {
			return nil, nil
		}
		return New(nil), nil
	}
	if s.CheckOnly {
		// The file is read when the engine is built: a profiles file
		// checks the same on every machine.
		return nil, nil
	}
	script, err := Load(s.Profile.Script)
	if err != nil {
		return nil, err
	}
	return New(script), nil
}
