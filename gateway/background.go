package gateway

import (
	"context"
	"net/http"
	"strings"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// A background response's end, as the app fetches it: GET
// /v1/responses/{id} answered with a status that ends it (completed,
// failed, incomplete, cancelled), or POST /v1/responses/{id}/cancel. The
// call that queued it stays open in its conversation until then (see
// calls.PlanBackgroundOutcome); its outcome is recorded before the app
// gets the answer, as any call's is.

// backgroundFetchOf returns the response r fetches or cancels, "" for
// another request. A streamed fetch (?stream=true) is not one: its events
// resume a stream, and pass through unrecorded.
func backgroundFetchOf(r *http.Request) string {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/v1/responses/")
	if !ok || rest == "" || r.URL.Query().Get("stream") == "true" {
		return ""
	}
	id, tail, _ := strings.Cut(rest, "/")
	switch {
	case r.Method == http.MethodGet && tail == "":
		return id
	case r.Method == http.MethodPost && tail == "cancel":
		return id
	}
	return ""
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
		g.cfg.Logger.Error("gateway: a background response's end was not recorded", "response", id, "err", err)
		g.cfg.Metrics.errors.WithLabelValues("unavailable").Inc()
		writeError(w, false, http.StatusServiceUnavailable, "turnlog could not record how background response "+id+
			" ended, so the provider's answer is withheld: "+err.Error()+"; retry shortly")
		return
	}
	if conv != "" {
		answer.header.Set(ConversationHeader, conv)
	}
	answer.send(w)
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
	conv := ref.Conversation
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
