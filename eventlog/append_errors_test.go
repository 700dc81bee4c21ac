package eventlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
