package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// A background response's end, as the app fetches it: GET
// /v1/responses/{id} answered with a status that ends it (completed,
// failed, incomplete, cancelled), POST /v1/responses/{id}/cancel, or GET
// /v1/responses/{id}?stream=true streamed to its final event. The call
// that queued it stays open in its conversation until then (see
// calls.PlanBackgroundOutcome); its outcome is recorded before the app
// gets the answer, as any call's is.

// backgroundFetchOf returns the response r fetches, streams or cancels
// ("" for another request), and whether r streams it.
func backgroundFetchOf(r *http.Request) (id string, streamed bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/v1/responses/")
	if !ok || rest == "" {
		return "", false
	}
	id, tail, _ := strings.Cut(rest, "/")
	switch {
	case r.Method == http.MethodGet && tail == "":
		return id, r.URL.Query().Get("stream") == "true"
	case r.Method == http.MethodPost && tail == "cancel":
		return id, false
	}
	return "", false
}

// forwardBackgroundFetch forwards a fetch of response id and, when its
// answer ends a background call the gateway recorded, records the call's
// outcome before passing the answer on (503, the answer withheld, when
// it cannot). Any other answer passes as it came.
func (g *Gateway) forwardBackgroundFetch(w http.ResponseWriter, r *http.Request, proxy http.Handler, id string) {
	g.forwardUnrecorded(r)
	answer := &heldResponse{header: http.Header{}, limit: g.cfg.MaxBody}
	proxy.ServeHTTP(answer, r)
	if answer.status/100 != 2 || answer.over || !g.cfg.Connected() {
		answer.send(w)
		return
	}
	out, err := calls.ParseResponse(calls.Responses, answer.body.Bytes())
	if err != nil || out.Background || out.ResponseID != id {
		answer.send(w) // not a response that ended: nothing to record
		return
	}
	conv, err := g.rec.recordBackground(r.Context(), id, calls.Outcome{Output: out, Duration: out.Took})
	if err != nil {
		g.backgroundNotRecorded(id, err)
		writeError(w, false, http.StatusServiceUnavailable, "turnlog could not record how background response "+id+
			" ended, so the provider's answer is withheld: "+err.Error()+"; retry shortly")
		return
	}
	if conv != "" {
		answer.header.Set(ConversationHeader, conv)
	}
	answer.send(w)
}

// backgroundNotRecorded logs and counts a background response's end that
// could not be recorded (its answer is withheld or cut).
func (g *Gateway) backgroundNotRecorded(id string, err error) {
	g.cfg.Logger.Error("gateway: a background response's end was not recorded", "response", id, "err", err)
	g.cfg.Metrics.errors.WithLabelValues("unavailable").Inc()
}

// forwardBackgroundStream forwards a streamed fetch of response id (GET
// /v1/responses/{id}?stream=true): the stream passes as it comes, and
// when a recorded call waits for the response, the stream's final event,
// which holds the whole response, is recorded as that call's outcome
// before the piece holding it is passed on. If it cannot be recorded, the
// stream is cut there, so the app never gets an end the log does not
// hold; if the index cannot say whether a call waits for it, the fetch is
// answered 503 and not forwarded. While NATS is away the stream passes
// unrecorded.
func (g *Gateway) forwardBackgroundStream(w http.ResponseWriter, r *http.Request, proxy http.Handler, id string) {
	g.forwardUnrecorded(r)
	if !g.cfg.Connected() {
		proxy.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), recordTimeout)
	ref, _, ok, err := g.rec.threads.Response(ctx, id)
	cancel()
	if err != nil {
		// Whether a recorded call waits for it cannot be told: its end
		// could not be recorded, so it is not forwarded (as a fetch's
		// answer is withheld).
		g.backgroundNotRecorded(id, err)
		writeError(w, false, http.StatusServiceUnavailable, "turnlog could not look up background response "+id+
			" in its threading index, so it could not record how it ends and did not forward the request: "+err.Error()+"; retry shortly")
		return
	}
	if !ok {
		proxy.ServeHTTP(w, r) // not a response the gateway recorded a call of
		return
	}
	proxy.ServeHTTP(&streamedFetch{ResponseWriter: w, g: g, ctx: r.Context(), id: id, conv: ref.Conversation}, r)
}

// streamedFetch is the http.ResponseWriter forwardBackgroundStream passes
// a stream through, reading its events as they pass.
type streamedFetch struct {
	http.ResponseWriter
	g      *Gateway
	ctx    context.Context
	id     string
	conv   string        // the conversation of the call waiting for the response
	stream *calls.Stream // nil: not a stream to read (an error, a JSON body), or its end is read
}

// Unwrap lets http.ResponseController flush the stream's events.
func (f *streamedFetch) Unwrap() http.ResponseWriter { return f.ResponseWriter }

func (f *streamedFetch) WriteHeader(status int) {
	if status/100 == 2 && strings.HasPrefix(f.Header().Get("Content-Type"), "text/event-stream") {
		f.stream = calls.NewStream(calls.Responses, int(f.g.cfg.MaxBody))
		f.Header().Set(ConversationHeader, f.conv)
	}
	f.ResponseWriter.WriteHeader(status)
}

func (f *streamedFetch) Write(p []byte) (int, error) {
	if f.stream != nil {
		f.stream.Write(p)
		if f.stream.Done() {
			s := f.stream
			f.stream = nil
			if err := f.recordEnd(s); err != nil {
				return 0, err
			}
		}
	}
	return f.ResponseWriter.Write(p)
}

// recordEnd records the end s brought, when it holds the response's final
// object (not an error event, which ends the stream but not the response).
func (f *streamedFetch) recordEnd(s *calls.Stream) error {
	out, err := s.Output()
	if err != nil {
		f.g.cfg.Logger.Warn("gateway: a background response's streamed end cannot be read; its call stays open until a fetch brings it", "response", f.id, "err", err)
		return nil
	}
	if !s.Final() || out.Background || out.ResponseID != f.id {
		return nil
	}
	if _, err := f.g.rec.recordBackgroundIn(f.ctx, f.conv, f.id, calls.Outcome{Output: out, Duration: out.Took}); err != nil {
		f.g.backgroundNotRecorded(f.id, err)
		return fmt.Errorf("turnlog could not record how background response %s ended, so its stream is cut: %w", f.id, err)
	}
	return nil
}

// recordBackground records how background response id ended as the
// outcome of the call that waits for it, and returns that call's
// conversation ("" when no recorded call waits for it: not one the
// gateway recorded, or its end is recorded already).
func (r *Recorder) recordBackground(ctx context.Context, id string, o calls.Outcome) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	ref, _, ok, err := r.threads.Response(ctx, id)
	if err != nil || !ok {
		return "", err
	}
	return r.recordBackgroundIn(ctx, ref.Conversation, id, o)
}

// recordBackgroundIn is recordBackground for a response the threading
// index says is conversation conv's.
func (r *Recorder) recordBackgroundIn(ctx context.Context, conv, id string, o calls.Outcome) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	call := ""
	turn, err := r.appendPlanned(ctx, conv, func(turn *projector.Turn) ([]events.Event, error) {
		if call = calls.BackgroundCall(turn, id); call == "" {
			return nil, nil
		}
		return calls.PlanBackgroundOutcome(turn, call, id, o)
	})
	if err != nil {
		return "", err
	}
	defer r.cache.put(turn)
	if call == "" {
		return "", nil
	}
	outcome := "finished"
	if o.Output.Error != "" {
		outcome = "failed"
	}
	r.metrics.calls.WithLabelValues(string(calls.Responses), outcome).Inc()
	scope := ""
	if st, ok, _ := r.startedOf(ctx, conv, call); ok {
		scope = st.Gateway[calls.MetaScope]
	}
	if err := r.threads.Record(ctx, conv, turn.Events, scope, turn.Blocks, nil, calls.AnswerOf(calls.Responses, o.Output)); err != nil {
		r.logger.Warn("gateway: call not indexed for threading", "conversation", conv, "err", err)
	}
	return conv, nil
}
