package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/turnlog/turnlog/operator"
)

// PromptRequest is the body of PUT /conversations/{id}/prompt: the text to
// make the conversation's system prompt, whether to lock it in the same
// step, why, and who acts (the actor is "operator:<by>", default
// "operator:http"). By is what the caller says: the token proves the
// caller may act, not who they are.
type PromptRequest struct {
	Text   *string `json:"text"`
	Lock   bool    `json:"lock,omitempty"`
	Reason string  `json:"reason,omitempty"`
	By     string  `json:"by,omitempty"`
}

// LockRequest is the optional body of POST
// /conversations/{id}/prompt/lock and /unlock.
type LockRequest struct {
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"`
}

const (
	promptExample = `{"text": "You are the support assistant.", "lock": true, "reason": "ticket 42", "by": "ada"}`
	lockExample   = `{"reason": "legal review", "by": "ada"}`
	// httpOperator is the operator name of an action whose body names
	// nobody.
	httpOperator = "http"
)

func (s *Server) promptRoutes() {
	s.mux.HandleFunc("GET /conversations/{id}/prompt", s.getPrompt)
	s.mux.HandleFunc("PUT /conversations/{id}/prompt", s.putPrompt)
	s.mux.HandleFunc("POST /conversations/{id}/prompt/lock", func(w http.ResponseWriter, r *http.Request) {
		s.lockPrompt(w, r, operator.LockPrompt, "lock")
	})
	s.mux.HandleFunc("POST /conversations/{id}/prompt/unlock", func(w http.ResponseWriter, r *http.Request) {
		s.lockPrompt(w, r, operator.UnlockPrompt, "unlock")
	})
}

// getPrompt answers GET /conversations/{id}/prompt with operator.PromptView:
// the conversation's system prompt and its history, re-projected from the
// log.
func (s *Server) getPrompt(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	v, err := operator.Show(r.Context(), s.cfg.Log, id)
	if err != nil {
		s.readError(w, id, "replay "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// putPrompt sets the conversation's system prompt (operator.SetPrompt) and
// answers the operator.Result.
func (s *Server) putPrompt(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	var req PromptRequest
	if !decodeBody(w, r, &req, promptExample) {
		return
	}
	if req.Text == nil {
		writeError(w, http.StatusBadRequest, `the body has no "text" key; send `+promptExample)
		return
	}
	actor, ok := operatorActor(w, req.By)
	if !ok {
		return
	}
	res, err := operator.SetPrompt(r.Context(), s.cfg.Log, id, *req.Text, actor, operator.SetOptions{Lock: req.Lock, Reason: req.Reason})
	s.answerAction(w, r, "set the prompt of "+id, res, err)
}

// lockPrompt serves POST .../prompt/lock and .../prompt/unlock with act,
// operator.LockPrompt or operator.UnlockPrompt.
func (s *Server) lockPrompt(w http.ResponseWriter, r *http.Request,
	act func(ctx context.Context, store operator.Store, conversation, actor, reason string) (*operator.Result, error), verb string) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	var req LockRequest
	if !decodeOptionalBody(w, r, &req, lockExample) {
		return
	}
	actor, ok := operatorActor(w, req.By)
	if !ok {
		return
	}
	res, err := act(r.Context(), s.cfg.Log, id, actor, req.Reason)
	s.answerAction(w, r, verb+" the prompt of "+id, res, err)
}

// operatorActor makes the actor of an action from the body's "by"; on
// failure it has answered 400.
func operatorActor(w http.ResponseWriter, by string) (string, bool) {
	if by == "" {
		by = httpOperator
	}
	actor, err := operator.Actor(by)
	if err != nil {
		writeError(w, http.StatusBadRequest, `"by": `+err.Error())
		return "", false
	}
	return actor, true
}

// answerAction answers an operator action: 200 with the result, 400 for
// bad input, 409 for a state the action cannot act on (locked, no
// prompt), 500 otherwise.
func (s *Server) answerAction(w http.ResponseWriter, r *http.Request, what string, res *operator.Result, err error) {
	switch {
	case err == nil:
		if res.Changed {
			s.cfg.Logger.Info("operator action", "what", what, "events", res.Events, "remote", r.RemoteAddr)
		}
		writeJSON(w, http.StatusOK, res)
	case errors.Is(err, operator.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, operator.ErrLocked), errors.Is(err, operator.ErrNoPrompt):
		writeError(w, http.StatusConflict, err.Error())
	default:
		s.serverError(w, what, err)
	}
}

// decodeOptionalBody is decodeBody for a route whose body may be empty.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any, example string) bool {
	data, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes; send less", tooLarge.Limit))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "read the body: "+err.Error())
		return false
	case len(bytes.TrimSpace(data)) == 0:
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	return decodeBody(w, r, v, example)
}
