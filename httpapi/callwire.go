package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/replay"
)

// WireBody is the answer of GET /conversations/{id}/calls/{call}/wire: the
// request model call number call sent, rendered again from the log.
type WireBody struct {
	Conversation string `json:"conversation"`
	Call         int    `json:"call"`
	N            int    `json:"n"`
	// Rendering names how Body was made: an engine's wire rendering
	// ("openai-chat/1", the version its closing event recorded), or
	// "canonical <api>" for a call the recording gateway recorded.
	Rendering string `json:"rendering"`
	// Description says in one line what Body is.
	Description string `json:"description"`
	// SHA256 is the hex SHA-256 of Body, Recorded the hash the log holds
	// (the wire_sha256 of an engine's call; the input hash of a gateway's)
	// and Verified whether Body is what was recorded. A body that does not
	// match is still shown, so the difference can be read, never passed
	// off as the request sent.
	SHA256   string `json:"sha256"`
	Recorded string `json:"recorded"`
	Verified bool   `json:"verified"`
	// Body is the request body, byte for byte as rendered (a JSON string:
	// re-encoding it as JSON would change its bytes).
	Body string `json:"body"`
	// Notes say what became of the blocks of the call's input that the
	// body does not show plainly (not sent, merged, sent in a field of
	// their own), when the engine says.
	Notes []WireNote `json:"notes"`
}

// WireNote is what became of one block of a call's input in its request.
type WireNote struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
	Sent  bool   `json:"sent"`
	Note  string `json:"note"`
}

// errNoWire: the call recorded no request that can be rendered again.
var errNoWire = errors.New("no wire request")

func (s *Server) callWireRoutes() {
	s.mux.HandleFunc("GET /conversations/{id}/calls/{call}/wire", s.callWire)
}

// callWire answers GET /conversations/{id}/calls/{call}/wire with a
// WireBody: 404 for a call the conversation does not have or that
// recorded no request this server can render again, saying why.
func (s *Server) callWire(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	v := r.PathValue("call")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("call %q: use a model call number, 1 for the first (the \"call\" of GET /conversations/%s/calls)", v, id))
		return
	}
	rec, err := replay.CallAt(r.Context(), s.cfg.Log, id, n)
	if errors.Is(err, eventlog.ErrNotFound) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%v; GET /conversations/%s/calls lists them", err, id))
		return
	}
	if err != nil {
		s.readError(w, id, "call "+v+" of "+id, err)
		return
	}
	out := &WireBody{Conversation: id, Call: rec.Call, N: rec.N, Notes: []WireNote{}}
	where := fmt.Sprintf("model call #%d of %s (event %d)", rec.Call, id, rec.N)
	if body, matches, ok, err := replay.GatewayRequest(rec); ok {
		if err != nil {
			writeError(w, http.StatusNotFound, fmt.Sprintf("%s was recorded by the gateway, but %v", where, err))
			return
		}
		out.Rendering = "canonical " + rec.Started.Gateway["api"]
		out.Description = "the request the client sent through the recording gateway, in the canonical form (JCS) its input hash is of: " +
			"the client's own bytes differ in spacing and member order only, and are recorded by their SHA-256 (wire_sha256)"
		out.Body, out.Recorded, out.Verified = string(body), rec.Started.InputHash, matches
		out.SHA256 = replay.WireSHA256(body)
		writeJSON(w, http.StatusOK, out)
		return
	}
	if err := s.engineWire(r, rec, out); err != nil {
		if errors.Is(err, errNoWire) {
			writeError(w, http.StatusNotFound, where+": "+err.Error())
			return
		}
		s.serverError(w, "render the request of "+where, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
