package scripted

import (
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/profile"
)

// The scripted engine is a profile's provider "scripted" (the default)
// in every binary that imports this package.
func init() { profile.RegisterEngine(profile.ProviderScripted, fromProfile) }

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
