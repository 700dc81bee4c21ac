package eventlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestAppendErrors checks that Append, which publishes without
// jetstream.PublishMsg, reports the failures a caller branches on as
// jetstream.PublishMsg did: a refusal as a *jetstream.APIError, a missing
// stream as jetstream.ErrNoStreamResponse, a done context as its error.
func TestAppendErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, l *eventlog.Log) context.Context
		check func(t *testing.T, err error)
	}{
		{
			name: "refused by the stream",
			setup: func(t *testing.T, l *eventlog.Log) context.Context {
				ctx := context.Background()
				s, err := l.JetStream().Stream(ctx, l.Names().EventsStream)
				require.NoError(t, err)
				cfg := s.CachedInfo().Config
				cfg.MaxMsgSize = 64
				_, err = l.JetStream().UpdateStream(ctx, cfg)
				require.NoError(t, err)
				return ctx
			},
			check: func(t *testing.T, err error) {
				var apiErr *jetstream.APIError
				require.True(t, errors.As(err, &apiErr), "got %v, want a *jetstream.APIError", err)
				assert.Equal(t, jetstream.JSErrCodeStreamMessageExceedsMaximum, apiErr.ErrorCode)
				assert.NotErrorIs(t, err, eventlog.ErrConflict)
			},
		},
		{
			name: "no stream",
			setup: func(t *testing.T, l *eventlog.Log) context.Context {
				ctx := context.Background()
				require.NoError(t, l.JetStream().DeleteStream(ctx, l.Names().EventsStream))
				return ctx
			},
			check: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, jetstream.ErrNoStreamResponse)
			},
		},
		{
			name: "cancelled",
			setup: func(t *testing.T, l *eventlog.Log) context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			check: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, context.Canceled)
			},
		},
		{
			name: "deadline while no stream answers",
			setup: func(t *testing.T, l *eventlog.Log) context.Context {
				require.NoError(t, l.JetStream().DeleteStream(context.Background(), l.Names().EventsStream))
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			check: func(t *testing.T, err error) {
				assert.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse),
					"got %v, want the deadline or no stream response", err)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := openLog(t, natstest.Start(t))
			ctx := tc.setup(t, l)
			_, err := l.Append(ctx, "c", 0, user("c", "r1", 0, "a message longer than the 64 bytes the refusing stream accepts"))
			require.Error(t, err)
			tc.check(t, err)
		})
	}
}

// TestAppendTimeout checks that an append nobody acknowledges gives up
// after the JetStream default timeout with an error matching
// context.DeadlineExceeded, whether ctx can be cancelled or not (Append
// counts the timeout differently in the two cases). It takes 5 seconds.
func TestAppendTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 5 s JetStream default timeout")
	}
	tests := []struct {
		name string
		ctx  func(t *testing.T) context.Context
	}{
		{name: "background", ctx: func(t *testing.T) context.Context { return context.Background() }},
		{name: "cancellable", ctx: func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			return ctx
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := natstest.Start(t)
			l := openLog(t, srv)
			require.NoError(t, l.JetStream().DeleteStream(context.Background(), l.Names().EventsStream))
			// A subscriber that never answers: the request has a responder,
			// so only the timeout ends it.
			sub, err := srv.Conn.Subscribe(l.Names().EventsRoleSubject("c", l.WriterRole()), func(*nats.Msg) {})
			require.NoError(t, err)
			t.Cleanup(func() { _ = sub.Unsubscribe() })
			_, err = l.Append(tc.ctx(t), "c", 0, user("c", "r1", 0, "nobody stores this"))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
}

// TestAppendRidesOutAStreamWithoutALeader: while no stream answers a
// subject (a cluster electing the stream's leader, which can take
// seconds on a loaded cluster), an append tries again until its timeout,
// not for half a second only as jetstream.PublishMsg does: a write that
// no stream received is safe to send again, and a shorter wait failed
// writes (a gateway call cut, a worker's request redelivered) that a
// second's patience would have stored. TestRetriedAppendOnALaggingReplica
// failed so once, "nats: no response from stream", on a loaded machine.
func TestAppendRidesOutAStreamWithoutALeader(t *testing.T) {
	srv := natstest.Start(t)
	l := openLog(t, srv)
	ctx := context.Background()
	require.NoError(t, l.JetStream().DeleteStream(ctx, l.Names().EventsStream))
	back := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		_, err := eventlog.Open(ctx, srv.Conn) // makes the stream again
		back <- err
	}()
	seq, err := l.Append(ctx, "c", 0, user("c", "r1", 0, "sent while no stream answered"))
	require.NoError(t, <-back)
	require.NoError(t, err, "stored once the stream answers again")
	turn, err := l.Load(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, seq, turn.Seq)
	assert.Equal(t, 1, turn.Events)
}
