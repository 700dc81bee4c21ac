package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestFaultyClusterCutsAndHeals checks the faulty network itself: an
// isolated server has no route left (nothing went around the proxies), the
// two others elect a leader and keep taking writes through a client that
// moves to them, and after Heal the isolated server is routed again and
// catches up.
func TestFaultyClusterCutsAndHeals(t *testing.T) {
	c := natstest.StartFaultyCluster(t, 3)
	nc, err := nats.Connect(c.ClientURLs("client"), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3, Storage: jetstream.FileStorage}
	require.NoError(t, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, cfg)
		return err
	}))
	for i := range 3 {
		require.Eventually(t, func() bool { return c.Server(i).NumRoutes() >= 2 }, 30*time.Second, 20*time.Millisecond)
	}

	leader := c.StreamLeader("T")
	require.GreaterOrEqual(t, leader, 0)
	c.Isolate(leader)
	require.Eventually(t, func() bool { return c.Server(leader).NumRoutes() == 0 }, 10*time.Second, 20*time.Millisecond,
		"the isolated server still has routes: a connection went around the proxies")
	require.NoError(t, natstest.Retry(ctx, 5*time.Second, func(ctx context.Context) error {
		_, err := js.Publish(ctx, "t.1", []byte("during"))
		return err
	}))
	// The cut-off server believes it leads until it notices it lost its
	// quorum, which may be after the publish above went through the new
	// leader: wait for it to step down.
	assert.Eventually(t, func() bool {
		l := c.StreamLeader("T")
		return l >= 0 && l != leader
	}, 30*time.Second, 50*time.Millisecond, "another server leads while the leader is cut off")

	c.Heal()
	require.Eventually(t, func() bool {
		return c.Server(leader).NumRoutes() >= 2 && c.Server(leader).JetStreamIsStreamCurrent("$G", "T")
	}, 60*time.Second, 50*time.Millisecond, "the healed server is routed again and current")
}
