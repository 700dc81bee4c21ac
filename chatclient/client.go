// Package chatclient sends chat requests and waits for their outcome the
// way `turnlog chat` does, riding through the faults of a cluster: leader
// elections, a server cut off from the others, a lost connection. It never
// reports a failure for a request that succeeded: when it cannot tell, it
// says so and names the request, which can be sent again under the same ID
// without being stored twice.
package chatclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/worker"
)

// Client asks through one connection and one log. Create it with New.
type Client struct {
	nc  *nats.Conn
	log *eventlog.Log
	// attempt bounds one request to the servers, so that a server that
	// does not answer (cut off without a sign) costs seconds, not the
	// whole deadline.
	attempt time.Duration
	// pollEvery is how often the wait reads the log besides watching it.
	pollEvery time.Duration
	// failoverAfter is how long JetStream may stay unavailable through
	// the connected server before the client moves to another one.
	failoverAfter time.Duration
	// beforeSend, set by tests, runs just before a request is sent.
	beforeSend func(worker.Request)
}

// New returns a client on nc and l; l may be attached (eventlog.Attach):
// asking needs no stream or bucket lookup.
func New(nc *nats.Conn, l *eventlog.Log) *Client {
	return &Client{nc: nc, log: l, attempt: 3 * time.Second, pollEvery: 2 * time.Second, failoverAfter: 3 * time.Second}
}

// NoAnswerError is returned by Ask when its context ended before the
// request did. The request may still end; its ID is how to find out.
type NoAnswerError struct {
	Conversation string
	RequestID    string
	// Sent reports whether JetStream acknowledged the request. When it is
	// false, the request may still have been stored (the acknowledgement
	// may be what was lost).
	Sent bool
	// Waited is how long Ask tried.
	Waited time.Duration
	// Last is the last error met on the way, if any (nil when the servers
	// answered and no worker ended the request in time).
	Last error
	err  error
}

func (e *NoAnswerError) Error() string {
	what := "no answer"
	if !e.Sent {
		what = "request not acknowledged"
	}
	msg := fmt.Sprintf("%s after %s for request %s of conversation %s", what, e.Waited.Round(time.Second), e.RequestID, e.Conversation)
	if e.Last != nil {
		msg += fmt.Sprintf(" (last error: %v)", e.Last)
	}
	return msg
}

func (e *NoAnswerError) Unwrap() error { return e.err }

// Ask sends req and waits until it ends or ctx does. A request without an
// ID gets a fresh one. A request with an ID is looked up in the
// conversation first: if the log already holds it (an earlier Ask that
// gave up, or another client), it is not sent again, and Ask returns or
// waits for its outcome; otherwise it is sent under that ID, which
// JetStream deduplicates within the requests stream's duplicate window.
//
// It returns the Result with a nil error when the request completed, with
// an error matching worker.ErrFailed when it ended in request.failed, with
// an error matching eventlog.ErrCauseReused, at once, when the request's
// ID belongs to a request of another conversation (nothing was sent), and
// with an error matching ErrDeadLettered when a worker kept the request
// as a dead letter (it says why: an app's conversation, say), and a
// *NoAnswerError when ctx ended first. Transient unavailability (an
// election, API error 10008, a timeout, a lost connection) is retried with
// backoff within ctx, moving to another of the connection's servers when
// the one in use stays unavailable. onDelta, when set, receives the
// answer's text as it streams (best effort: deltas are not stored).
func (c *Client) Ask(ctx context.Context, req worker.Request, onDelta func(worker.Delta), opts ...AskOption) (worker.Result, error) {
	began := time.Now()
	var set askSettings
	for _, o := range opts {
		o(&set)
	}
	feed := &eventFeed{fn: set.onEvent}
	if err := events.ValidateConversationID(req.Conversation); err != nil {
		return worker.Result{}, err
	}
	resend := req.RequestID != ""
	if !resend {
		req.RequestID = ulid.Make().String()
	} else if _, err := ulid.ParseStrict(req.RequestID); err != nil {
		return worker.Result{}, fmt.Errorf("request ID %q is not a ULID (26 characters of Crockford base32): %w", req.RequestID, err)
	}
	noAnswer := func(sent bool, last error) error {
		return &NoAnswerError{Conversation: req.Conversation, RequestID: req.RequestID, Sent: sent,
			Waited: time.Since(began), Last: last, err: ctx.Err()}
	}
	r := c.retrier()
	if onDelta != nil {
		unsubscribe, err := c.deltas(req, onDelta)
		if err != nil {
			return worker.Result{}, err
		}
		defer unsubscribe()
	}

	var after uint64
	if resend {
		var found []eventlog.Record
		err := r.do(ctx, c.streamsMissing(func(ctx context.Context) error {
			var err error
			found, after, err = c.find(ctx, req.Conversation, req.RequestID)
			return err
		}))
		if err != nil {
			if ctx.Err() != nil {
				return worker.Result{}, noAnswer(false, r.lastErr())
			}
			return worker.Result{}, err
		}
		if len(found) > 0 {
			feed.add(found...)
			if res, ended := worker.Outcome(found); ended {
				return finished(res)
			}
			// Under way: wait for it from just before its first step.
			return c.wait(ctx, r, req, found[0].Seq-1, feed, nil, noAnswer)
		}
	} else {
		var last eventlog.Tail
		err := r.do(ctx, c.streamsMissing(func(ctx context.Context) error {
			var err error
			last, err = worker.LastStep(ctx, c.log, req.Conversation)
			after = last.Seq
			return err
		}))
		if err == nil {
			// An app's conversation, which the gateway records from the
			// app's calls, is not the worker's to answer in.
			err = worker.NotAnApps(req.Conversation, last)
		}
		if err != nil {
			if ctx.Err() != nil {
				return worker.Result{}, noAnswer(false, r.lastErr())
			}
			return worker.Result{}, err
		}
	}
	dead := c.watchDeadLetters()
	if c.beforeSend != nil {
		c.beforeSend(req)
	}
	if err := c.send(ctx, r, req); err != nil {
		if ctx.Err() != nil {
			return worker.Result{}, noAnswer(false, r.lastErr())
		}
		return worker.Result{}, err
	}
	return c.wait(ctx, r, req, after, feed, dead, noAnswer)
}

// finished turns an ended request's Result into Ask's return values.
func finished(res worker.Result) (worker.Result, error) {
	if res.Failed != "" {
		return res, fmt.Errorf("%w: %s", worker.ErrFailed, res.Failed)
	}
	return res, nil
}

// find reads the whole conversation for the events of request id. It
// returns them and the conversation's last sequence.
func (c *Client) find(ctx context.Context, conv, id string) ([]eventlog.Record, uint64, error) {
	var found []eventlog.Record
	var last uint64
	for rec, err := range c.log.Events(ctx, conv) {
		if err != nil {
			return nil, 0, err
		}
		last = rec.Seq
		if rec.Cause == id {
			found = append(found, rec)
		}
	}
	return found, last, nil
}

// send publishes req until JetStream acknowledges it. Every attempt carries
// the same message ID, so a retry of a request that was stored after all
// is dropped as a duplicate.
func (c *Client) send(ctx context.Context, r *retrier, req worker.Request) error {
	return r.do(ctx, c.streamsMissing(func(ctx context.Context) error {
		_, err := worker.Send(ctx, c.log, req)
		return err
	}))
}

// streamsMissing wraps fn so that, when nothing answers it (an election,
// or no stream at all) three times, it asks whether turnlog's streams
// exist, and fails at once when one does not: a server that no worker set
// up is named at once instead of after the deadline.
func (c *Client) streamsMissing(fn func(context.Context) error) func(context.Context) error {
	silent := 0
	return func(ctx context.Context) error {
		err := fn(ctx)
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) {
			return err
		}
		if silent++; silent%3 != 0 {
			return err
		}
		for _, name := range []string{c.log.Names().EventsShardStream(0), c.log.Names().RequestsStream} {
			if _, serr := c.log.JetStream().Stream(ctx, name); errors.Is(serr, jetstream.ErrStreamNotFound) {
				return permanent(fmt.Errorf("no stream %s on the server: start `turnlog serve`, or a `turnlog worker` against it, first", name))
			}
		}
		return err
	}
}

// deltas subscribes onDelta to the request's streamed text. The returned
// stop unsubscribes and waits out a call that is running, so that no
// onDelta call runs once it has returned (Unsubscribe alone lets a
// callback already under way go on, racing the caller's next write).
func (c *Client) deltas(req worker.Request, onDelta func(worker.Delta)) (func(), error) {
	var (
		mu      sync.Mutex
		stopped bool
	)
	sub, err := c.nc.Subscribe(c.log.Names().DeltaSubject(req.Conversation), func(m *nats.Msg) {
		var d worker.Delta
		if json.Unmarshal(m.Data, &d) != nil || d.RequestID != req.RequestID {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			onDelta(d)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("follow the answer's text: %w", err)
	}
	return func() {
		_ = sub.Unsubscribe()
		mu.Lock()
		stopped = true
		mu.Unlock()
	}, nil
}
