package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/turnlog/turnlog/replay"
)

const (
	// defaultCallsLimit and maxCallsLimit bound a page of GET
	// /conversations/{id}/calls: each call on the page carries its output
	// and the diff of its input against the previous call's.
	defaultCallsLimit = 100
	maxCallsLimit     = 1000
)

func (s *Server) callRoutes() {
	s.mux.HandleFunc("GET /conversations/{id}/calls", s.calls)
}

// calls answers GET /conversations/{id}/calls?from=<call>&limit=<n> with a
// replay.CallsPage: the conversation's model calls from call number from
// (default 1), at most limit of them (default 100), each with what
// changed in its input since the previous call; "next" names the from of
// the next page.
func (s *Server) calls(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	page := replay.Page{From: 1, Limit: defaultCallsLimit}
	for _, q := range []struct {
		key      string
		to       *int
		min, max int
		hint     string
	}{
		{"from", &page.From, 1, 1 << 30, "a model call number, 1 for the first (the calls' \"call\"; an answer's \"next\" is the next page's)"},
		{"limit", &page.Limit, 1, maxCallsLimit, fmt.Sprintf("a number of calls from 1 to %d", maxCallsLimit)},
	} {
		v := r.URL.Query().Get(q.key)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < q.min || n > q.max {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("%s %q: use %s", q.key, v, q.hint))
			return
		}
		*q.to = n
	}
	out, err := replay.Calls(r.Context(), s.cfg.Log, id, page)
	if err != nil {
		s.readError(w, id, "calls of "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
