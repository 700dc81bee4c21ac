package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
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

// StreamReady is the data of a stream's first event ("ready"): from here
// on nothing is missed. Seq and Events locate the conversation's last
// message and event when the stream started (0 for a new conversation);
// the first "event" has n = Events + 1.
type StreamReady struct {
	Conversation string `json:"conversation"`
	Seq          uint64 `json:"seq"`
	Events       int    `json:"events"`
}

// StreamEvent is the data of a stream's "event" events: one event the log
// stored, with its position.
type StreamEvent struct {
	// N is the event's position in the conversation (the n of
	// <conversation>@<n>) and Seq the stream sequence of its message.
	N       int            `json:"n"`
	Seq     uint64         `json:"seq"`
	Time    time.Time      `json:"time"`
	Type    events.Type    `json:"type"`
	Actor   string         `json:"actor"`
	Cause   string         `json:"cause"`
	Step    int            `json:"step"`
	Payload events.Payload `json:"payload"`
}

const (
	messageExample = `{"text": "hello"}`
	// streamKeepAlive is how often an idle stream sends a comment, so
	// proxies keep it open and a gone client is noticed.
	streamKeepAlive = 15 * time.Second
	// deltaBuffer is how many deltas may wait for a slow client before
	// NATS drops some (a delta is a preview; the log has the text).
	deltaBuffer = 4096
	// flushTimeout bounds the round trip that makes sure the delta
	// subscription is in place before "ready".
	flushTimeout = 5 * time.Second
)

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

// stream answers GET /conversations/{id}/stream with Server-Sent Events:
// "ready" once it listens, then "delta" (worker.Delta JSON, from the
// conversation's delta subject: the answer as the model writes it; never
// before the first event of its request),
// "event" (StreamEvent, every event the log stores from then on, in
// order), "dead_letter" (StreamDeadLetter: a request of the conversation a
// worker kept as a dead letter instead of answering; those of the last
// minutes first, after "ready"), "quarantined"
// (replay.Quarantined: a message stored on the conversation's subject that
// is not a step) and "foreign"
// (replay.ForeignEntry: a message turnlog did not write, the timeline's
// entry for it) until the client goes away.
// A failure ends the stream with an "error" event ({"error": "..."}).
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	id, ok := conversationID(w, r)
	if !ok {
		return
	}
	// Known before "ready": a shutdown that starts once the client has
	// seen "ready" ends this stream.
	shutdown := shutdownOf(r)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// Subscribe to deltas first, then fix the point to follow the log
	// from: a request sent after "ready" is seen whole.
	deltas := make(chan *nats.Msg, deltaBuffer)
	nc := s.cfg.Log.JetStream().Conn()
	sub, err := nc.ChanSubscribe(s.cfg.Log.Names().DeltaSubject(id), deltas)
	if err != nil {
		s.serverError(w, "subscribe to the deltas of "+id, err)
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	dead := make(chan *nats.Msg, deadLetterBuffer)
	dsub, err := nc.ChanSubscribe(s.cfg.Log.Names().DeadLetterSubject(), dead)
	if err != nil {
		s.serverError(w, "subscribe to the dead letters", err)
		return
	}
	defer func() { _ = dsub.Unsubscribe() }()
	flushCtx, flushed := context.WithTimeout(ctx, flushTimeout)
	err = nc.FlushWithContext(flushCtx) // the server has the subscriptions
	flushed()
	if err != nil {
		s.serverError(w, "subscribe to the deltas of "+id, err)
		return
	}
	turn, err := s.cfg.Log.Load(ctx, id)
	if err != nil {
		s.readError(w, id, "load "+id, err)
		return
	}
	order := newDeltaOrder(deltaBuffer)
	chatSubject := s.cfg.Log.Names().ChatSubject(id)
	// A request already running has stored its first events before
	// "ready": its deltas go out at once.
	if tail, err := s.cfg.Log.Last(ctx, id); err == nil && len(tail.Events) > 0 && !tail.Closed() {
		order.event(tail.Cause)
	}
	type watched struct {
		rec eventlog.Record
		err error
	}
	recs := make(chan watched)
	go func() {
		for rec, err := range s.cfg.Log.WatchWithForeign(ctx, id, turn.Seq, turn.Events) {
			select {
			case recs <- watched{rec, err}:
			case <-ctx.Done():
				return
			}
			if err != nil && !errors.Is(err, eventlog.ErrCorruptMessage) && !errors.Is(err, eventlog.ErrForeignMessage) {
				return
			}
		}
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, v any) bool {
		data, err := json.Marshal(v)
		if err != nil {
			data, _ = json.Marshal(errorBody{Error: err.Error()})
			event = "error"
		}
		return writeEvent(w, rc, event, data) == nil
	}
	if !send("ready", StreamReady{Conversation: id, Seq: turn.Seq, Events: turn.Events}) {
		return
	}
	// The dead letters stored just before (a client reconnecting after a
	// cut), then those the subscription brings, each request once.
	told := map[string]bool{}
	for _, d := range s.recentDeadLetters(ctx, chatSubject) {
		told[d.RequestID] = true
		if !send("dead_letter", d) {
			return
		}
	}
	keepAlive := time.NewTicker(streamKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-shutdown:
			send("end", errorBody{Error: "the server is shutting down; reconnect when it is back"})
			return
		case m := <-deltas:
			// Compacted, valid JSON has no line break, which would end
			// the event early; anything else is not a worker.Delta.
			var data bytes.Buffer
			if json.Compact(&data, m.Data) != nil {
				continue
			}
			for _, d := range order.delta(data.Bytes()) {
				if writeEvent(w, rc, "delta", d) != nil {
					return
				}
			}
		case m := <-dead:
			d, ok := deadLetterOf(m, chatSubject)
			if !ok || told[d.RequestID] {
				continue
			}
			told[d.RequestID] = true
			if !send("dead_letter", d) {
				return
			}
		case wr := <-recs:
			var alien *eventlog.ForeignMessageError
			if errors.As(wr.err, &alien) {
				// Ignored by every read, as in the timeline, but never
				// passed over without a word: a viewer learns it landed.
				if !send("foreign", replay.ForeignEntry(alien)) {
					return
				}
				continue
			}
			var bad *eventlog.CorruptMessageError
			if errors.As(wr.err, &bad) {
				if !send("quarantined", quarantinedEvent{replay.Quarantined{Seq: bad.Seq, Size: bad.Size, Reason: bad.Err.Error()}, bad.Time}) {
					return
				}
				continue
			}
			if wr.err != nil {
				s.cfg.Logger.Warn("http api: stream ended", "conversation", id, "err", wr.err)
				send("error", errorBody{Error: wr.err.Error() + "; reconnect to follow the conversation again"})
				return
			}
			rec := wr.rec
			if !send("event", StreamEvent{N: rec.Pos, Seq: rec.Seq, Time: rec.Time, Type: rec.Type, Actor: rec.Actor,
				Cause: rec.Cause, Step: rec.Step, Payload: rec.Payload}) {
				return
			}
			for _, d := range order.event(rec.Cause) {
				if writeEvent(w, rc, "delta", d) != nil {
					return
				}
			}
		case <-keepAlive.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// shutdownKey is the request context key under which Start puts the
// channel closed when its server shuts down.
type shutdownKey struct{}

// shutdowns maps each *http.Server not made by Start that serves a stream
// to a channel closed when it shuts down. Shutdown does not cancel the
// requests in flight, and a stream never ends by itself: without this,
// every open stream would hold `turnlog serve` for the whole shutdown
// grace period.
var shutdowns sync.Map

// shutdownOf returns the channel closed when the server of r shuts down
// (nil, which never fires, outside an http.Server). A server made by Start
// registered it before serving, so no shutdown is missed; for another
// server it is registered on first use, which misses a shutdown that began
// before (RegisterOnShutdown only runs what is registered when Shutdown
// starts).
func shutdownOf(r *http.Request) <-chan struct{} {
	if ch, ok := r.Context().Value(shutdownKey{}).(chan struct{}); ok {
		return ch
	}
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return nil
	}
	ch := make(chan struct{})
	if v, loaded := shutdowns.LoadOrStore(srv, ch); loaded {
		return v.(chan struct{})
	}
	srv.RegisterOnShutdown(sync.OnceFunc(func() { close(ch) })) // Shutdown may run twice
	return ch
}

// writeEvent writes one Server-Sent Event and flushes it. data must be
// compact JSON: it has no line break, so it is one data line.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, event string, data []byte) error {
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
		return err
	}
	return rc.Flush()
}

// quarantinedEvent is the data of the live stream's "quarantined" event:
// the message, and when the stream stored it.
type quarantinedEvent struct {
	replay.Quarantined
	Time time.Time `json:"time"`
}
