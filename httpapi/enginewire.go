package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// engineWire renders again, into out, the request a worker's engine sent
// for rec, with Config.Wire. errNoWire (wrapped, saying why) when there is
// none to render.
func (s *Server) engineWire(r *http.Request, rec *replay.CallRecord, out *WireBody) error {
	w := rec.Wire()
	switch {
	case rec.Closed == nil:
		return fmt.Errorf("%w: no event closed the call yet (it is running, or what made it stopped)", errNoWire)
	case w.IsZero():
		if _, failed := rec.Closed.(events.InferenceFailed); failed {
			return fmt.Errorf("%w: the call recorded none (it failed before sending one, or was recorded by a turnlog before wire hashes)", errNoWire)
		}
		return fmt.Errorf("%w: the call recorded none: its engine records none (an engine of your own calls engine.DescribeWire "+
			"and registers its rendering with profile.WithWire: see docs/library.md), or a turnlog before wire hashes recorded it", errNoWire)
	case s.cfg.Wire == nil:
		return fmt.Errorf("%w: this server renders no engine's requests (turnlog serve does; a program of its own sets httpapi.Config.Wire)", errNoWire)
	case !s.cfg.Wire.Knows(w.Version):
		return fmt.Errorf("%w: rendering %q is not one this turnlog knows (recorded by a newer turnlog or another program's engine)", errNoWire, w.Version)
	case rec.Input == nil:
		return fmt.Errorf("%w: the call's input cannot be rebuilt from the log (see replay --verify)", errNoWire)
	}
	body, notes, err := s.cfg.Wire.RenderWire(r.Context(), w, rec.Input)
	if errors.Is(err, engine.ErrUnknownRendering) {
		return fmt.Errorf("%w: %v", errNoWire, err)
	}
	if err != nil {
		return fmt.Errorf("%w: the request (rendering %q) cannot be rendered again from the log: %v", errNoWire, w.Version, err)
	}
	out.Rendering, out.Recorded = w.Version, w.SHA256
	out.Description = "the request body as the engine sent it, rendered again from the log by the same engine: what turnlog replay --inference N --wire prints"
	out.Body, out.SHA256 = string(body), replay.WireSHA256(body)
	out.Verified = out.SHA256 == w.SHA256
	for _, n := range notes {
		out.Notes = append(out.Notes, WireNote{Index: n.Index, ID: n.ID, Sent: n.Sent, Note: n.Note})
	}
	return nil
}
