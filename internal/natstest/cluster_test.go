package natstest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestClusterSurvivesLeaderLoss checks the helper itself: an R3 stream on
// the cluster keeps taking writes when its leader is stopped, and the
// restarted server catches up on what it missed.
func TestClusterSurvivesLeaderLoss(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	assert.Equal(t, 3, strings.Count(c.URLs(), ",")+1)
	assert.GreaterOrEqual(t, c.MetaLeader(), 0)

	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	// A request may be lost while the routes of a new cluster settle: bound
	// each attempt. Creating the same stream again is harmless.
	cfg := jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3, Storage: jetstream.FileStorage, AllowDirect: true}
	for {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = js.CreateStream(attempt, cfg)
		cancel()
		if err == nil {
			break
		}
		require.NoError(t, ctx.Err(), "create stream: %v", err)
	}

	publish := func(i int) {
		t.Helper()
		// During an election a publish may time out or find no leader,
		// and a request in flight when its server dies is never answered:
		// bound each attempt and retry; the message ID stores it once.
		for {
			attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := js.Publish(attempt, "t.x", []byte(fmt.Sprint(i)), jetstream.WithMsgID(fmt.Sprint(i)))
			cancel()
			if err == nil {
				return
			}
			require.NoError(t, ctx.Err(), "publish %d: %v", i, err)
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i := range 10 {
		publish(i)
	}
	leader := c.StreamLeader("T")
	require.GreaterOrEqual(t, leader, 0, "the stream has a leader")
	c.Stop(leader)
	assert.Nil(t, c.Server(leader))
	for i := 10; i < 20; i++ {
		publish(i)
	}
	c.Restart(leader)
	require.NotNil(t, c.Server(leader))

	// Once it leads the stream, reads through it come from its own store.
	c.LeadStream(leader, "T")
	one, err := nats.Connect(c.URL(leader))
	require.NoError(t, err)
	defer one.Close()
	jsOne, err := jetstream.New(one)
	require.NoError(t, err)
	s, err := jsOne.Stream(ctx, "T")
	require.NoError(t, err)
	for i := range 20 {
		m, err := s.GetMsg(ctx, uint64(i+1))
		require.NoError(t, err, "message %d, read from the restarted server", i+1)
		assert.Equal(t, fmt.Sprint(i), string(m.Data), "message %d", i+1)
	}
	_, err = s.GetMsg(ctx, 21)
	assert.ErrorIs(t, err, jetstream.ErrMsgNotFound, "nothing duplicated")
}

// TestLeadMeta: LeadMeta hands the meta group to the server asked for, and
// every server follows it.
func TestLeadMeta(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	want := (c.MetaLeader() + 1) % c.N()
	c.LeadMeta(want)
	assert.Equal(t, want, c.MetaLeader())
	for i := range c.N() {
		assert.True(t, c.Server(i).JetStreamIsCurrent(), "n%d follows the meta leader", i+1)
		assert.Equal(t, i == want, c.Server(i).JetStreamIsLeader(), "n%d believes it is meta leader", i+1)
	}
}
