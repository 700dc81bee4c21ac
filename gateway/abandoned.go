package gateway

// Calls a gateway began and never finished: the process was killed, or
// lost NATS, after recording the call's input and before its outcome. The
// app saw its connection fail and usually retries; the log holds the call
// open. When the conversation's next call is recorded, the gateway
// recording it closes such a call as abandoned, once it knows that no
// running process will finish it: its own calls by its set of calls in
// flight, another gateway's by asking whether that gateway still runs.

import (
	"context"
	"fmt"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// tails is the part of *eventlog.Log that reads a conversation's last
// step.
type tails interface {
	Last(ctx context.Context, conversation string) (eventlog.Tail, error)
}

// liveness is the part of *eventlog.Log that tells running gateways from
// stopped ones (see eventlog.Log.Alive).
type liveness interface {
	AnswerAlive(instance string) (stop func(), err error)
	Alive(ctx context.Context, instance string) (bool, error)
}

// abandoned returns the closing events of the gateway calls that conv's
// last step left open and that no running process will finish. It is
// asked only when the call loaded conv's Turn from the log (after a
// restart, a conflict, a failed append: a gateway's cached Turn follows
// its own calls), and looks at the last step alone: the step a stopped
// call left is the last one until the next call comes. Anything it cannot
// read leaves the call open (logged): a false failure in the record would
// be worse than an open call. The caller says, once the closing events
// are stored, what was closed (closedAbandoned).
func (r *Recorder) abandoned(ctx context.Context, conv string) []events.Payload {
	tl, ok := r.log.(tails)
	if !ok || r.instance == "" {
		return nil
	}
	tail, err := tl.Last(ctx, conv)
	if err != nil || tail.Seq == 0 {
		return nil
	}
	var out []events.Payload
	for _, e := range events.OpenCalls(tail.Events) {
		st := e.Payload.(events.InferenceStarted)
		instance := st.Gateway["instance"]
		if instance == "" {
			continue // not a gateway's live call
		}
		var why string
		if instance == r.instance {
			if _, running := r.running.Load(st.InferenceID); running {
				continue
			}
			why = "no outcome was recorded: this gateway could not record the call's answer (see its error log), and the call is no longer in flight"
		} else {
			lv, ok := r.log.(liveness)
			if !ok {
				continue
			}
			alive, err := lv.Alive(ctx, instance)
			if err != nil {
				r.logger.Warn("gateway: could not ask whether the gateway of an unfinished call runs; the call stays open", "conversation", conv, "instance", instance, "err", err)
				continue
			}
			if alive {
				continue // in progress there
			}
			why = fmt.Sprintf("no outcome was recorded: the gateway that made the call (instance %s) stopped before it recorded the answer", instance)
		}
		// Its duration unknown (0, latency_ms null): the time until
		// this call closed it is the outage's, not the call's.
		out = append(out, events.InferenceFailed{InferenceID: st.InferenceID, Error: why, Transient: true})
	}
	return out
}

// closedAbandoned logs and counts the calls that closing (abandoned's
// events, stored in conv by a call of api) closed.
func (r *Recorder) closedAbandoned(conv string, api string, closing []events.Event) {
	for _, e := range closing {
		if f, ok := e.Payload.(events.InferenceFailed); ok {
			r.logger.Warn("gateway: an unfinished call is closed as abandoned", "conversation", conv, "call", f.InferenceID, "reason", f.Error)
			r.metrics.calls.WithLabelValues(api, "abandoned").Inc()
		}
	}
}

// wentOn reports whether conv went on past state c, which a call
// continues, with another call: one that finished, or one in flight (a
// sibling made at the same moment, recorded first), after which the call
// forks the conversation at c. A call that failed, or one that no running
// process will finish (the app's retry follows it), is not: the call
// continues the conversation. What cannot be read counts as not.
func (r *Recorder) wentOn(ctx context.Context, conv string, c *calls.Ref) bool {
	el, ok := r.log.(eventsLog)
	if !ok {
		return false
	}
	var past []events.Event
	for rec, err := range el.Events(ctx, conv) {
		if err != nil {
			return false
		}
		if rec.Pos > c.Events {
			past = append(past, rec.Event)
		}
	}
	for _, e := range past {
		if _, ok := e.Payload.(events.InferenceFinished); ok {
			return true
		}
	}
	lv, _ := r.log.(liveness)
	for _, e := range events.OpenCalls(past) {
		st := e.Payload.(events.InferenceStarted)
		switch instance := st.Gateway["instance"]; {
		case instance == "":
		case instance == r.instance:
			if _, running := r.running.Load(st.InferenceID); running {
				return true
			}
		case lv != nil:
			if alive, err := lv.Alive(ctx, instance); err == nil && alive {
				return true
			}
		}
	}
	return false
}

// holdsTurn reports whether req's input begins with every block of turn:
// the call has seen what the conversation holds past the state it was
// threaded to (an answer the shared index has not caught up with), and
// continues it; a sibling's input lacks the blocks of the call recorded
// before it.
func holdsTurn(req *calls.Request, turn *projector.Turn) bool {
	if req == nil {
		return false
	}
	in := req.RequestBlocks()
	if len(in) < len(turn.Blocks) {
		return false
	}
	for i := range turn.Blocks {
		if calls.Key(&turn.Blocks[i]) != calls.Key(&in[i]) {
			return false
		}
	}
	return true
}
