package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// ConversationInfo is one conversation in GET /conversations.
type ConversationInfo struct {
	ID string `json:"id"`
	// Messages counts the conversation's stored steps (messages, not
	// events: one step may carry several events).
	Messages uint64 `json:"messages"`
	// UpdatedAt is when its last event was created.
	UpdatedAt time.Time `json:"updated_at"`
	// Events, ModelCalls, LastRequestFailed and Findings are what `turnlog
	// ls` shows, under its JSON names, read the same way
	// (replay.Describe): the console's list and ls never disagree.
	// Findings counts the rules its model inputs broke; `turnlog replay
	// --check` lists them.
	Events            int  `json:"events"`
	ModelCalls        int  `json:"model_calls"`
	LastRequestFailed bool `json:"last_request_failed"`
	// LastRequestOpen: its latest gateway call has no outcome (see
	// replay.Conversation.LastRequestOpen).
	LastRequestOpen bool `json:"last_request_open"`
	// WaitingFor is the background response such an open call waits for
	// (replay.Conversation.WaitingFor).
	WaitingFor string `json:"waiting_for,omitempty"`
	Findings   int    `json:"findings"`
	// FirstMessage and ForkedFrom tell apart conversations named by
	// ULIDs alone (replay.Conversation.FirstMessage, ForkedFrom).
	FirstMessage string `json:"first_message"`
	ForkedFrom   string `json:"forked_from,omitempty"`
}

// ConversationsBody is the answer of GET /conversations: the conversations
// whose ID contains the query, newest first.
type ConversationsBody struct {
	Conversations []ConversationInfo `json:"conversations"`
	// Total counts every match; Conversations holds at most limit of them.
	Total int `json:"total"`
}

const (
	// defaultListLimit and maxListLimit bound GET /conversations: the
	// list costs one direct get per matching conversation (for its last
	// message's time), and a page cannot show a million rows anyway.
	defaultListLimit = 500
	maxListLimit     = 10000
)

func (s *Server) conversationRoutes() {
	s.mux.HandleFunc("GET /conversations", s.listConversations)
	s.mux.HandleFunc("GET /conversations/{id}/timeline", s.timeline)
	s.mux.HandleFunc("GET /conversations/{id}/turn", s.turn)
	s.mux.HandleFunc("GET /diff", s.diff)
	s.mux.HandleFunc("/conversations/{id}", s.conversationItself)
}

// conversationItself answers a request for /conversations/{id} itself,
// which has no representation: what there is lies under it. A DELETE
// (someone looking for erasure) is told that erasing is the admin's
// command, not an HTTP request: 405, and no method allowed.
func (s *Server) conversationItself(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodDelete {
		w.Header().Set("Allow", "")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("conversations are not erased over HTTP: run `turnlog erase %s` with the admin's key (docs/auditing.md)", events.CommandArg(id)))
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("/conversations/%s has no representation of its own: see /conversations/%s/timeline, /turn, /calls or /prompt (docs/http-api.md)", id, id))
}

// listConversations answers GET
// /conversations?q=<substring>&limit=<n>&findings=true. The query matches
// IDs as a case-insensitive substring; findings=true keeps the
// conversations with findings only.
func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) {
	q := strings.ToLower(r.URL.Query().Get("q"))
	limit := defaultListLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: use a number from 1 to %d", v, maxListLimit))
			return
		}
		limit = n
	}
	onlyFindings, ok := onlyWithFindings(w, r)
	if !ok {
		return
	}
	found, err := replay.Newest(r.Context(), s.cfg.Log, func(id string) bool { return strings.Contains(strings.ToLower(id), q) })
	if err == nil && onlyFindings {
		found, err = s.withFindings(r.Context(), found)
	}
	total := len(found)
	if err == nil {
		// Counting reads each listed conversation's history, as ls does:
		// only those the answer holds (or none, remembered from an earlier
		// listing, when they have not changed).
		found = found[:min(limit, total)]
		err = s.described.Describe(r.Context(), s.cfg.Log, found)
	}
	if err != nil {
		s.serverError(w, "list conversations", err)
		return
	}
	matches := make([]ConversationInfo, len(found))
	for i, c := range found {
		matches[i] = ConversationInfo{ID: c.ID, Messages: c.Messages, UpdatedAt: c.LastActivity,
			Events: c.Events, ModelCalls: c.ModelCalls, LastRequestFailed: c.LastRequestFailed, LastRequestOpen: c.LastRequestOpen, WaitingFor: c.WaitingFor, Findings: c.Findings,
			FirstMessage: c.FirstMessage, ForkedFrom: c.ForkedFrom}
	}
	writeJSON(w, http.StatusOK, ConversationsBody{Conversations: matches, Total: total})
}

// conversationID reads and checks the {id} of the route; on failure it has
// answered 400.
func conversationID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if err := events.ValidateConversationID(id); err != nil {
		writeError(w, http.StatusBadRequest, "conversation ID: "+err.Error())
		return "", false
	}
	return id, true
}

// timeline answers GET /conversations/{id}/timeline with replay.Timeline:
// one entry per event, and at every model call the input Turn and the
// active system prompt, all re-projected from the log.
func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	h, err := replay.Timeline(r.Context(), s.cfg.Log, id)
	if err != nil {
		s.readError(w, id, "replay "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// turn answers GET /conversations/{id}/turn[?at=<n>] with the Turn after
// the n-th event (the latest without at), in the JSON form diff-turns
// reads as a file.
func (s *Server) turn(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	n := -1
	if v := r.URL.Query().Get("at"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("at %q: use an event position, 0, 1, 2, ... (0 is the empty Turn; the timeline's n)", v))
			return
		}
	}
	t, err := s.loadTurn(r.Context(), id, n)
	if err != nil {
		s.readError(w, id, "load "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// loadTurn loads <id>@<n>, or the latest Turn when n < 0, which must have
// events.
func (s *Server) loadTurn(ctx context.Context, id string, n int) (*projector.Turn, error) {
	if n >= 0 {
		return s.cfg.Log.LoadAt(ctx, id, n)
	}
	t, err := s.cfg.Log.Load(ctx, id)
	if err == nil && t.Events == 0 {
		err = fmt.Errorf("load %s: %w", id, replay.ErrNoEvents)
	}
	return t, err
}

// diff answers GET /diff?a=<conversation>[@<n>]&b=<conversation>[@<n>] with
// the replay.Result that `turnlog diff-turns A B -o json` prints.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	var turns [2]*projector.Turn
	for i, key := range []string{"a", "b"} {
		v := r.URL.Query().Get(key)
		id, n, err := parsePoint(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("%s: %v", key, err))
			return
		}
		if turns[i], err = s.loadTurn(r.Context(), id, n); err != nil {
			s.readError(w, id, "load "+v, fmt.Errorf("%s: %w", key, err))
			return
		}
	}
	writeJSON(w, http.StatusOK, replay.Diff(turns[0], turns[1]))
}

const pointExample = "/diff?a=conv-1@4&b=conv-1@9"

// parsePoint reads <conversation>@<n> (n < 0 when there is no @n: the
// latest Turn), as diff-turns names points.
func parsePoint(v string) (string, int, error) {
	if v == "" {
		return "", 0, errors.New("missing; name two points like " + pointExample + " (@n is the Turn after event n; without it, the latest Turn)")
	}
	id, n := v, -1
	if i := strings.LastIndexByte(v, '@'); i >= 0 {
		id = v[:i]
		var err error
		if n, err = strconv.Atoi(v[i+1:]); err != nil || n < 0 {
			return "", 0, fmt.Errorf("%q: after '@' comes an event position (0, 1, 2, ...), as in %s", v, pointExample)
		}
	}
	if err := events.ValidateConversationID(id); err != nil {
		return "", 0, fmt.Errorf("conversation ID: %w", err)
	}
	return id, n, nil
}

// readError answers a failed read of conversation id: 404 when it has no
// events or fewer than asked for, 422 when a message of it is not a step
// (see eventlog.ErrCorruptMessage) or one whose events do not apply
// (eventlog.ErrUnappliable), else 500.
func (s *Server) readError(w http.ResponseWriter, id, what string, err error) {
	var bad *eventlog.CorruptMessageError
	var unappliable *eventlog.UnappliableError
	switch {
	case errors.Is(err, replay.ErrNoEvents):
		writeError(w, http.StatusNotFound, fmt.Sprintf("conversation %q has no events; check the ID (GET /conversations lists them)", id))
	case errors.Is(err, eventlog.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error()+"; pick a position from the timeline (GET /conversations/"+id+"/timeline)")
	case errors.Is(err, events.ErrInvalidConversationID):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.As(err, &bad):
		// Not NATS's fault, and no retry will help: the stored log has a
		// message that is not a step. The error names it and the repair.
		writeError(w, http.StatusUnprocessableEntity, bad.Error())
	case errors.As(err, &unappliable):
		// Neither: a stored step does not apply to the conversation.
		writeError(w, http.StatusUnprocessableEntity, unappliable.Error())
	default:
		s.serverError(w, what, err)
	}
}
