package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/tracing"
	"github.com/turnlog/turnlog/worker"
)

// MessageRequest is the body of POST /conversations/{id}/messages: a chat
// request, as worker.Request without the conversation (the path names it).
type MessageRequest struct {
	Text string `json:"text"`
	// RequestID, when set, must be a ULID; a re-send with the same ID
	// within the duplicate window is stored once. An ID sent to another
	// conversation within eventlog.RequestIDTTL is refused with 409.
	// Empty: a fresh one.
	RequestID string            `json:"request_id,omitempty"`
	Profile   string            `json:"profile,omitempty"`
	Model     string            `json:"model,omitempty"`
	Data      map[string]string `json:"data,omitempty"`
}

// MessageResponse is the answer of POST /conversations/{id}/messages. The
// request is queued, not answered: follow GET /conversations/{id}/stream
// until the event request.completed (or request.failed) whose cause is
// RequestID.
type MessageResponse struct {
	RequestID    string `json:"request_id"`
	Conversation string `json:"conversation"`
}

const messageExample = `{"text": "hello"}`

func (s *Server) chatRoutes() {
	s.mux.HandleFunc("POST /conversations/{id}/messages", s.postMessage)
	s.mux.HandleFunc("GET /conversations/{id}/stream", s.stream)
}

// postMessage queues a chat request for the workers (worker.Send) and
// answers 202 with its ID.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	var body MessageRequest
	if !decodeBody(w, r, &body, messageExample) {
		return
	}
	switch {
	case body.Text == "":
		writeError(w, http.StatusBadRequest, `"text" is empty; send the message, like `+messageExample)
		return
	case len(body.Text) > worker.DefaultMaxTextBytes:
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`"text" is %d bytes; the limit is %d: send less`, len(body.Text), worker.DefaultMaxTextBytes))
		return
	}
	if body.RequestID != "" {
		if _, err := ulid.ParseStrict(body.RequestID); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf(`"request_id" %q is not a ULID (26 characters of Crockford base32); omit it to have one generated`, body.RequestID))
			return
		}
	}
	if err := s.checkRequestData(body.Profile, body.Data); err != nil {
		writeError(w, http.StatusBadRequest, `"data": `+err.Error())
		return
	}
	// An app's conversation, which the gateway records from the app's
	// calls, is not the worker's to answer in.
	last, err := worker.LastStep(r.Context(), s.cfg.Log, id)
	if err != nil {
		s.serverError(w, "read the conversation's last step", err)
		return
	}
	if err := worker.NotAnApps(id, last); err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if body.RequestID != "" {
		// Refused here, at once: the worker could only fail it.
		if err := s.cfg.Log.ClaimRequestID(r.Context(), body.RequestID, id); errors.Is(err, eventlog.ErrCauseReused) {
			writeError(w, http.StatusConflict, err.Error())
			return
		} else if err != nil {
			s.serverError(w, "claim the request ID", err)
			return
		}
	}
	// A traceparent on the HTTP request goes on with the chat request:
	// the worker's spans join the caller's trace.
	req, err := worker.Send(tracing.Extract(r.Context(), r.Header), s.cfg.Log, worker.Request{Conversation: id, RequestID: body.RequestID,
		Text: body.Text, Profile: body.Profile, Model: body.Model, Data: body.Data})
	if errors.Is(err, eventlog.ErrCauseReused) {
		// The ID was sent over NATS to another conversation, which the
		// claims did not know of: JetStream dropped this request as a
		// duplicate. The claim just made must not stick.
		var reused *eventlog.RequestIDReusedError
		owner := ""
		if errors.As(err, &reused) {
			owner = reused.Owner
		}
		if rerr := s.cfg.Log.ReleaseRequestID(context.WithoutCancel(r.Context()), body.RequestID, id, owner); rerr != nil {
			s.cfg.Logger.Warn("request ID claim not released", "conversation", id, "request", body.RequestID, "err", rerr)
		}
		writeError(w, http.StatusConflict, fmt.Sprintf("request_id %s: %v; send every request with a fresh request_id (or none, to have one generated)", body.RequestID, eventlog.ErrCauseReused))
		return
	}
	if errors.Is(err, worker.ErrQueueFull) {
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if err != nil {
		s.serverError(w, "send the chat request", err)
		return
	}
	s.cfg.Logger.Info("chat request sent", "conversation", id, "request", req.RequestID, "bytes", len(body.Text), "remote", r.RemoteAddr)
	writeJSON(w, http.StatusAccepted, MessageResponse{RequestID: req.RequestID, Conversation: id})
}

// checkRequestData refuses request data that sets a reserved key (the
// conversation's prompt, trust, locks) the request's profile does not
// allow: the worker would fail the request for it anyway, so the caller
// learns it at once and nothing is queued.
func (s *Server) checkRequestData(profileName string, data map[string]string) error {
	if profileName == "" {
		profileName = profile.DefaultName
	}
	var allow []string
	if p, ok := s.cfg.Profiles[profileName]; ok {
		allow = p.AllowRequestData
	}
	return middlewares.CheckRequestData(data, allow)
}
