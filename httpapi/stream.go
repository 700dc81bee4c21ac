package httpapi

// This file holds a conversation's live stream, GET
// /conversations/{id}/stream: Server-Sent Events of what the log stores,
// the answer as the model writes it, and what comes on the conversation's
// subject that is not a step.

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
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

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
	tellRecent := func() bool {
		for _, d := range s.recentDeadLetters(ctx, chatSubject) {
			if told[d.RequestID] {
				continue
			}
			told[d.RequestID] = true
			if !send("dead_letter", d) {
				return false
			}
		}
		return true
	}
	if !tellRecent() {
		return
	}
	// The subscription hears every conversation's dead letters: a burst
	// of others' that overflows its buffer makes NATS drop some, this
	// conversation's among them maybe. Once it did, they are read again
	// from the stream, at most once a second (a flood that goes on is
	// read again on a later message, or at the next keep-alive).
	var dropped int
	var reread time.Time
	tellMissed := func() bool {
		n, err := dsub.Dropped()
		if err != nil || n <= dropped || time.Since(reread) < time.Second {
			return true
		}
		dropped, reread = n, time.Now()
		return tellRecent()
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
			if !tellMissed() {
				return
			}
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
			if !tellMissed() {
				return
			}
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
