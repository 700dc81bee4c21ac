package worker

// This file holds Serve: one request served the way Run serves those it
// consumes, for programs that take requests from elsewhere.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/events"
)

// Served is how a request served by Serve ended, as the log records it.
type Served struct {
	// Completed is true when the log ends the request with
	// request.completed, false for request.failed.
	Completed bool
	// Reason is request.failed's reason ("" when completed).
	Reason string
	// ModelCalls is request.completed's count of model calls (those of
	// the attempt that completed it, the summariser's included).
	ModelCalls int
}

// ErrNoRequestID is Serve's error for a request without a RequestID: the
// ID is what makes a request served twice (after a crash, a retry) resume
// instead of running again, so Serve will not make one up.
var ErrNoRequestID = errors.New("request_id is required: give each request a ULID of its own (engine.NewID) and the same one when you retry it")

// Serve serves one chat request exactly as Run serves a request it takes
// from the requests stream, for a program that runs its own loop (its own
// HTTP handler or queue) and wants turnlog's recording: the Turn loaded
// from snapshot and tail (or the worker's cache), the user's message and
// data, the profile's middleware chain and the tool loop with every step
// committed, and the end recorded as request.completed with the number of
// model calls, or request.failed with a reason (an unknown profile, data
// the profile does not allow, a model error that retries did not cure).
//
// Calling it again with the same RequestID, before the conversation's
// next request, is safe: a request the log shows completed or failed is
// not run again (its outcome is returned), one the log holds in part
// resumes after its last step. An error means
// the end could not be recorded (the log unavailable, ctx ended, another
// writer kept moving the conversation): nothing final is stored and the
// same request may be served again later. Calls for one conversation must
// not overlap (Run guarantees that for its own requests by partition);
// calls for different conversations may. Serve needs no Run: New, then
// Serve.
//
// A conversation erased (turnlog erase) while Serve runs is not written
// back: Serve stores nothing more and returns ErrConversationErased. It
// tells so by comparing the erasure's time, as the NATS server stamped
// it, with the time Serve was called, by this process's clock: keep the
// clocks in sync (as Run needs not, its requests being stamped by the
// server too).
func (w *Worker) Serve(ctx context.Context, req Request) (Served, error) {
	if req.RequestID == "" {
		return Served{}, ErrNoRequestID
	}
	if _, err := ulid.ParseStrict(req.RequestID); err != nil {
		return Served{}, fmt.Errorf("request_id %q is not a ULID: %w", req.RequestID, err)
	}
	if err := events.ValidateConversationID(req.Conversation); err != nil {
		return Served{}, err
	}
	// The checks a request from the stream gets (text, size, data), by
	// the same code: a request that fails them ends as request.failed.
	body, err := json.Marshal(req)
	if err != nil {
		return Served{}, fmt.Errorf("serve %s: %w", req.RequestID, err)
	}
	received := time.Now()
	req, problem := parseRequest(body, req.Conversation, 0, received, w.cfg.MaxTextBytes)

	w.inflight.Add(1)
	defer w.inflight.Done()
	out, err := w.serve(ctx, req, received, problem, true, true)
	if errors.Is(err, ErrConversationErased) || err != nil && out != ack {
		return Served{}, fmt.Errorf("serve %s: %w", req.RequestID, err)
	}
	w.handled.Add(1)
	tail, err := w.cfg.Log.Last(ctx, req.Conversation)
	if err != nil {
		return Served{}, fmt.Errorf("serve %s: read its end: %w", req.RequestID, err)
	}
	if tail.Cause == req.RequestID {
		for _, e := range tail.Events {
			switch p := e.Payload.(type) {
			case events.RequestCompleted:
				return Served{Completed: true, ModelCalls: p.Inferences}, nil
			case events.RequestFailed:
				return Served{Reason: p.Reason}, nil
			}
		}
	}
	return Served{}, fmt.Errorf("serve %s: the log's last step is not this request's end; another writer appended after it", req.RequestID)
}
