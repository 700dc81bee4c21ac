package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// ErrAppsConversation matches the error of a chat request refused because
// its conversation is an app's: recorded by the gateway from the app's own
// calls, which its last step is. A worker's answer there would be written
// into the app's record, though the app never sees it; the app's next call
// would then show as rewriting its history (replay --check reports
// history_rewritten against the app). A fork of the conversation
// (turnlog fork) carries its Turn into a conversation of its own, where
// the worker may answer.
var ErrAppsConversation = errors.New("the conversation is an app's, recorded by the gateway from its calls")

// NotAnApps returns an error matching ErrAppsConversation when last,
// conversation's last step (eventlog.Log.Last), was written by the
// recording gateway, or ends a worker's request that an app's call took
// over (request.failed's TakenOver), and nil otherwise (a new conversation
// too). Clients ask it before they send a chat request (the HTTP API,
// turnlog chat); the worker asks it again before a request's first step
// and keeps a refused request as a dead letter, writing nothing into the
// app's record.
func NotAnApps(conversation string, last eventlog.Tail) error {
	if appsStep(last) {
		return fmt.Errorf("%w: a message sent to %s would be answered by turnlog's worker into the app's record, and the app's next call would then show as rewriting its history; fork it and chat in the fork: turnlog fork %s",
			ErrAppsConversation, conversation, events.CommandArg(conversation))
	}
	return nil
}

// appsStep reports whether step t says its conversation is an app's: the
// gateway wrote it, or it ends a request an app's call took over.
func appsStep(t eventlog.Tail) bool {
	if gatewayWrote(t) {
		return true
	}
	for _, e := range t.Events {
		if f, ok := e.Payload.(events.RequestFailed); ok && f.TakenOver {
			return true
		}
	}
	return false
}

// ownStep reports whether step t is request id's own: its cause, not
// written by the gateway. An app's call ID is no request's: a request that
// names one (anyone who reads the conversation sees them) resumes nothing.
func ownStep(t eventlog.Tail, id string) bool { return t.Cause == id && !gatewayWrote(t) }

// gatewayWrote reports whether the recording gateway wrote step t.
func gatewayWrote(t eventlog.Tail) bool {
	for _, e := range t.Events {
		if e.Actor == calls.Actor {
			return true
		}
	}
	return false
}

// takenOverError is why a request that had stored steps stops: an app's
// call through the gateway landed after them (the request was under way,
// or its ack was lost after its end). own is the request's last step.
type takenOverError struct {
	own  eventlog.Tail
	apps error
}

func (e *takenOverError) Error() string {
	return "the conversation was taken over by an app while the request ran: " + e.apps.Error()
}

func (e *takenOverError) Unwrap() error { return e.apps }

// endTakenOver ends req, under way when an app's call landed after its
// last step (taken.own): its steps are in the app's record already, and
// it ends there, failed, saying why, its open model calls closed.
func (w *Worker) endTakenOver(ctx context.Context, req Request, taken *takenOverError) (outcome, error) {
	turn, err := w.cfg.Log.Load(ctx, req.Conversation)
	if err != nil {
		return retryLater, err
	}
	tx := engine.NewTx(turn, req.RequestID, engine.WithStep(taken.own.Step+1))
	if name, ok := w.servingProfile(req); ok {
		// Its stored steps ran with this profile: replay --rerun re-runs
		// them with it.
		ctx = withProfile(ctx, name)
	}
	if err := closeInterrupted(tx, events.OpenCalls(taken.own.Events), "the request then stopped: an app took the conversation over"); err != nil {
		return w.fail(ctx, tx, err.Error())
	}
	return w.failAs(ctx, tx, events.RequestFailed{Reason: taken.Error(), TakenOver: true}, false)
}

// notTakenOver returns nil unless the conversation's last step, tail, is
// the gateway's (NotAnApps). Then it looks back through the steps stored
// since the request was sent for one of the request's own: none, and the
// request is refused (an error matching ErrAppsConversation: it is kept
// as a dead letter); one, and a *takenOverError with it (the request
// started before the app's call landed).
func (w *Worker) notTakenOver(ctx context.Context, req Request, sent time.Time, tail eventlog.Tail) error {
	apps := NotAnApps(req.Conversation, tail)
	if apps == nil {
		return nil
	}
	// The requests stream's leader stamped sent, the events stream's
	// leader each step: on a cluster their clocks may differ a little.
	for t := tail; !sent.IsZero() && !t.Stored.Before(sent.Add(-clockSkew)); {
		if ownStep(t, req.RequestID) {
			return &takenOverError{own: t, apps: apps}
		}
		prev, ok, err := w.cfg.Log.Before(ctx, req.Conversation, t)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		t = prev
	}
	return apps
}

// clockSkew is how far apart two servers' clocks may be when a request's
// sending time (the requests stream's) is compared with its steps' (the
// events stream's).
const clockSkew = 5 * time.Second

// LastStep is l.Last(conversation) as a client reads it before it sends a
// chat request, for NotAnApps: a damaged last step is no error here (the
// worker fails the request, saying so), and the Tail still has its Seq.
func LastStep(ctx context.Context, l *eventlog.Log, conversation string) (eventlog.Tail, error) {
	last, err := l.Last(ctx, conversation)
	if errors.Is(err, eventlog.ErrCorruptMessage) {
		err = nil
	}
	return last, err
}
