package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// apiErr is a JetStream API error as nats-server sends it (status and
// error code from its errors.json).
func apiErr(status int, code jetstream.ErrorCode, desc string) error {
	return &jetstream.APIError{Code: status, ErrorCode: code, Description: desc}
}

// TestUnavailable: what a client retries (JetStream could not answer now)
// and what it reports at once (JetStream answered no). A refusal
// classified as unavailability is retried until the caller's deadline
// and then reported as "no answer", hiding the reason; unavailability
// classified as a refusal fails a request an election would have let
// through.
func TestUnavailable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "no error", err: nil, want: false},
		{name: "10008 cluster not available", err: apiErr(503, 10008, "JetStream system temporarily unavailable"), want: true},
		{name: "10008 wrapped", err: fmt.Errorf("append c: %w", apiErr(503, 10008, "JetStream system temporarily unavailable")), want: true},
		{name: "10158 duplicate message ID in process", err: apiErr(409, 10158, "duplicate message id is in process"), want: true},
		{name: "10163 expected last sequence per subject not ready", err: apiErr(503, 10163, "expected last sequence per subject temporarily unavailable"), want: true},
		{name: "10023 insufficient resources", err: apiErr(503, 10023, "insufficient resources"), want: true},
		{name: "an unknown 503", err: apiErr(503, 19999, "something temporary"), want: true},
		{name: "context deadline", err: context.DeadlineExceeded, want: true},
		{name: "nats timeout", err: nats.ErrTimeout, want: true},
		{name: "timeout wrapped", err: fmt.Errorf("stream info: %w", nats.ErrTimeout), want: true},
		{name: "no responders", err: nats.ErrNoResponders, want: true},
		{name: "no stream response", err: jetstream.ErrNoStreamResponse, want: true},
		{name: "no heartbeat", err: jetstream.ErrNoHeartbeat, want: true},
		{name: "reconnecting", err: nats.ErrConnectionReconnecting, want: true},
		{name: "disconnected", err: nats.ErrDisconnected, want: true},
		{name: "reconnecting without a reconnect buffer", err: nats.ErrReconnectBufExceeded, want: true},
		{name: "connection lost mid-read", err: io.EOF, want: true},

		{name: "10071 wrong last sequence", err: apiErr(400, 10071, "wrong last sequence: 7"), want: false},
		{name: "10164 wrong last sequence", err: apiErr(400, 10164, "wrong last sequence"), want: false},
		{name: "conflict", err: &eventlog.ConflictError{Conversation: "c", Expected: 3, Actual: 5}, want: false},
		{name: "10077 store failed (a limit refused the message)", err: apiErr(503, 10077, "maximum messages per subject exceeded"), want: false},
		{name: "10077 wrapped", err: fmt.Errorf("send: %w", apiErr(503, 10077, "maximum messages exceeded")), want: false},
		{name: "10063 expected stream sequence does not match", err: apiErr(503, 10063, "expected stream sequence does not match"), want: false},
		{name: "10059 stream not found", err: apiErr(404, 10059, "stream not found"), want: false},
		{name: "stream not found", err: jetstream.ErrStreamNotFound, want: false},
		{name: "permission denied", err: nats.ErrPermissionViolation, want: false},
		{name: "connection closed for good", err: nats.ErrConnectionClosed, want: false},
		{name: "canceled by the caller", err: context.Canceled, want: false},
		{name: "some other error", err: errors.New("boom"), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, eventlog.Unavailable(tc.err), "Unavailable(%v)", tc.err)
		})
	}
}

// TestUnavailableLimitRefusal: the refusal a real server gives a request
// beyond the requests stream's limits is an answer, not unavailability:
// a chat client must report it (the queue is full) rather than retry
// until its deadline.
func TestUnavailableLimitRefusal(t *testing.T) {
	srv := natstest.Start(t)
	l := openLog(t, srv, eventlog.WithRequestLimits(eventlog.RequestLimits{MaxAge: time.Hour, MaxBytes: 8 << 20, MaxPerConversation: 1}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subject := l.Names().ChatSubject("full")
	_, err := l.PublishRequest(ctx, subject, []byte(`{"text":"one"}`), "01J00000000000000000000001")
	require.NoError(t, err)
	_, err = l.PublishRequest(ctx, subject, []byte(`{"text":"two"}`), "01J00000000000000000000002")
	require.Error(t, err, "the second pending request of the conversation is refused")
	assert.False(t, eventlog.Unavailable(err), "a limit's refusal classified as unavailability: %v", err)
}
