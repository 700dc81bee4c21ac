package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// Send publishes a chat request on turnlog.chat.<conversation>, giving it a
// fresh request ID when it has none (the ID is also the message's
// Nats-Msg-Id, so a re-send within the duplicate window is dropped). It
// returns the request as sent. A request ID that another conversation used
// within the duplicate window is refused with an error matching
// eventlog.ErrCauseReused (see eventlog.RequestIDReusedError): JetStream
// would drop the request as a duplicate, and nothing would answer it.
func Send(ctx context.Context, l *eventlog.Log, r Request) (Request, error) {
	if err := events.ValidateConversationID(r.Conversation); err != nil {
		return r, fmt.Errorf("send: %w", err)
	}
	if r.RequestID == "" {
		r.RequestID = ulid.Make().String()
	}
	data, err := json.Marshal(r)
	if err != nil {
		return r, fmt.Errorf("send: %w", err)
	}
	subject := l.Names().ChatSubject(r.Conversation)
	if _, err := l.PublishRequest(ctx, subject, data, r.RequestID); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeStoreFailed {
			return r, fmt.Errorf("send to %s: %w: %s; retry later", subject, ErrQueueFull, apiErr.Description)
		}
		return r, fmt.Errorf("send to %s: %w", subject, err)
	}
	return r, nil
}

// ErrQueueFull is returned by Send when the requests stream refused the
// request because one of its limits is reached (eventlog.RequestLimits:
// too many pending requests for the conversation, or in all): nothing was
// queued, and sending later may succeed.
var ErrQueueFull = errors.New("the request queue is full")

// errCodeStoreFailed is JetStream's "stream store failed" (10077), which a
// publish gets when a limit of the stream refuses the message.
const errCodeStoreFailed jetstream.ErrorCode = 10077

// Result is how a request ended, as the log records it.
type Result struct {
	// Answer is the model's final text (the llm_text blocks after the last
	// model call of the request).
	Answer string
	// Failed is the reason from request.failed, "" when it completed.
	Failed string
	// Events are the request's events, in order.
	Events []eventlog.Record
}

// ErrFailed is returned by Await for a request that ended in
// request.failed; the Result holds the reason.
var ErrFailed = errors.New("request failed")

// Await follows the conversation from afterSeq (read the conversation's
// last sequence before sending, so nothing is missed) until the request
// ends, and returns its answer. It gives up at the first error of the
// watch; chatclient.Client.Ask rides through them.
func Await(ctx context.Context, l *eventlog.Log, conversation, requestID string, afterSeq uint64, afterPos int) (Result, error) {
	var recs []eventlog.Record
	for rec, err := range l.Watch(ctx, conversation, afterSeq, afterPos) {
		if errors.Is(err, eventlog.ErrCorruptMessage) {
			continue // not a step: the request's end is still to come
		}
		if err != nil {
			res, _ := Outcome(recs)
			return res, err
		}
		if rec.Cause != requestID {
			continue
		}
		recs = append(recs, rec)
		if res, ended := Outcome(recs); ended {
			if res.Failed != "" {
				return res, fmt.Errorf("%w: %s", ErrFailed, res.Failed)
			}
			return res, nil
		}
	}
	res, _ := Outcome(recs)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("waiting for request %s: %w", requestID, err)
	}
	return res, fmt.Errorf("waiting for request %s: the watch ended", requestID)
}

// Outcome folds the events of one request, in log order, into its Result,
// and reports whether they include its end (request.completed or
// request.failed): events after the end are ignored.
func Outcome(recs []eventlog.Record) (res Result, ended bool) {
	var text []string
	for _, rec := range recs {
		res.Events = append(res.Events, rec)
		switch p := rec.Payload.(type) {
		case events.InferenceStarted:
			text = text[:0]
		case events.LLMTextAppended:
			text = append(text, p.Text)
		case events.RequestCompleted:
			res.Answer = strings.Join(text, "\n")
			return res, true
		case events.RequestFailed:
			res.Failed = p.Reason
			return res, true
		}
	}
	return res, false
}
