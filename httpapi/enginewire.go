package httpapi

import (
	"net/http"

	"github.com/turnlog/turnlog/replay"
)

// engineWire renders again the request a worker's engine sent for rec
// into out.
func (s *Server) engineWire(_ *http.Request, _ *replay.CallRecord, _ *WireBody) error {
	return errNoWire
}
