package eventlog

import (
	"context"
	"errors"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Unavailable reports whether err means that JetStream could not answer
// now, rather than that it answered no: a request that timed out or found
// no responder while a cluster elects a leader, a server cut off from the
// others ("JetStream system temporarily unavailable", API error 10008), a
// connection lost or being re-established. Retrying later, perhaps through
// another server, may succeed. A refusal is not unavailability, even one
// sent with status 503: a stream's limit refusing the message (10077), an
// expected sequence not matching. A caller's own context ending is not
// unavailability: check ctx.Err() first.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, ErrStorageFull) {
		// Storage full (10023 from a publish is the server's max_store)
		// is an answer: retried, it would hold the caller until its
		// deadline and end as a timeout that hides the cause.
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case 10008, // JSClusterNotAvailErr: no meta leader, or cut off from it
			10163,                      // expected last sequence per subject temporarily unavailable
			10005,                      // no suitable peers for placement (a node is cut off)
			10023,                      // insufficient resources (a node is cut off)
			10118, 10119, 10194, 10195, // stream or consumer offline
			10158: // duplicate message ID in process: an earlier try is not committed yet
			return true
		case 10077, // stream store failed: a limit of the stream refused the message
			10063: // expected stream sequence does not match
			// Answers with status 503 that say no: retried, they would
			// hold the caller until its deadline and hide the reason.
			return false
		}
		return apiErr.Code == 503
	}
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.Is(err, nats.ErrNoServers) ||
		errors.Is(err, nats.ErrStaleConnection) ||
		errors.Is(err, io.EOF)
}
