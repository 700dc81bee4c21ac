package profile

import (
	"errors"
	"log/slog"

	"github.com/turnlog/turnlog/engine"
)

// BuildWithEngine is Build with eng as the model instead of the profile's
// provider. `turnlog replay --rerun` passes an engine that answers with the
// outputs a log recorded, so that today's middlewares run exactly as a
// worker would run them (same names, order and settings) without calling
// a model; the compaction middleware's summarizer asks eng too. tools nil
// gives no tools (unlike Build: a replay must not run real tools). The
// profile's provider need not be registered: its engine is not built.
func (p Profile) BuildWithEngine(eng engine.Engine, logger *slog.Logger, tools *engine.Tools) (*Built, error) {
	if eng == nil {
		return nil, errors.New("profile: BuildWithEngine needs an engine")
	}
	if err := p.validate(false); err != nil {
		return nil, err
	}
	return p.assemble(eng, logger, tools, p.Model)
}
