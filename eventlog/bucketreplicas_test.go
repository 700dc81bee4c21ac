package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestBucketsMadeLaterKeepTheInstallationsReplicas: the workers of a
// 3-node cluster create the streams with --replicas 3; `turnlog gateway`
// (no --replicas) creates the gateways' own buckets on first use. They get
// the replicas of the installation's events, not one: a bucket on one
// server stops every gateway from starting, and turnlog status from
// answering, while that one server is down.
func TestBucketsMadeLaterKeepTheInstallationsReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := natstest.StartCluster(t, 3)
	openClusterLog(t, c) // the workers: WithReplicas(3)

	nc := c.Dial(t, "gateway")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var gw *eventlog.Log
	require.NoError(t, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) (err error) {
		gw, err = eventlog.Open(ctx, nc)
		return err
	}))
	require.NoError(t, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) error {
		_, err := gw.Gateways(ctx)
		return err
	}))
	require.NoError(t, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) error {
		_, err := gw.BackgroundResponses(ctx)
		return err
	}))
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	for _, stream := range []string{"KV_" + gw.Names().GatewaysBucket, "KV_" + gw.Names().BackgroundBucket} {
		s, err := js.Stream(ctx, stream)
		require.NoError(t, err)
		assert.Equal(t, 3, s.CachedInfo().Config.Replicas, "%s's replicas", stream)
	}
}
