package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/turnlog/turnlog/replay"
)

// describedConversations bounds what a Server remembers of conversations'
// histories (replay.Descriptions): a few hundred bytes each.
const describedConversations = 100_000

// onlyWithFindings reads the findings parameter of GET /conversations
// (true: only conversations whose model inputs broke a rule of replay
// --check); on a bad value it has answered 400.
func onlyWithFindings(w http.ResponseWriter, r *http.Request) (only, ok bool) {
	v := r.URL.Query().Get("findings")
	if v == "" {
		return false, true
	}
	only, err := strconv.ParseBool(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("findings %q: use true (only conversations with findings) or false", v))
		return false, false
	}
	return only, true
}

// withFindings keeps the conversations of cs (newest first) that have
// findings, described. Finding out costs a read of each one's history,
// as in `turnlog ls`, but a Server remembers what it read against each
// conversation's last message: a conversation is read again only after
// it changed, not on every listing.
func (s *Server) withFindings(ctx context.Context, cs []replay.Conversation) ([]replay.Conversation, error) {
	if err := s.described.Describe(ctx, s.cfg.Log, cs); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cs, func(c replay.Conversation) bool { return c.Findings == 0 }), nil
}
