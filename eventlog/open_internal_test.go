package eventlog

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestOpenTwiceUpdatesNothing: the streams as the server reports them
// after Open are what a second Open wants, so it sends no update (an
// update on every start of every process would be churn on a cluster).
func TestOpenTwiceUpdatesNothing(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l, err := Open(ctx, srv.Conn)
	require.NoError(t, err)
	for _, want := range []jetstream.StreamConfig{l.requestsConfig(), l.deadLettersConfig()} {
		s, err := l.js.Stream(ctx, want.Name)
		require.NoError(t, err)
		have := s.CachedInfo().Config
		want.Replicas = have.Replicas
		want.SubjectTransform = have.SubjectTransform
		require.False(t, needsUpdate(have, want), "%s would be updated again", want.Name)
	}
}
