package eventlog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestOpenTwiceUpdatesNothing: the streams as the server reports them
// after Open are what a second Open wants, so it sends no update (an
// update on every start of every process would be churn on a cluster).
func TestOpenTwiceUpdatesNothing(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	for _, want := range l.WantedStreams() {
		s, err := l.JetStream().Stream(ctx, want.Name)
		require.NoError(t, err)
		have := s.CachedInfo().Config
		want.Replicas = have.Replicas
		want.SubjectTransform = have.SubjectTransform
		require.False(t, eventlog.NeedsUpdate(have, want), "%s would be updated again", want.Name)
	}
}
