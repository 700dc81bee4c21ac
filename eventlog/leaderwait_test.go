package eventlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestReadWaitsForTheStreamsLeader: while a replicated stream elects a
// leader, its replicas answer a request for its leader with "JetStream
// system temporarily unavailable" (API error 10008). Seen in CI in
// TestFaultMatrix/events_leader_partitioned: `replay --verify` read the
// conversation right after the network healed and failed with that error,
// where the cluster had a leader again a moment later. A read waits for a
// leader, as an append does, while its context allows. Here every route
// is cut until the reader's server, a follower, finds its stream without a
// leader; the routes heal half a second after a read began.
func TestReadWaitsForTheStreamsLeader(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := natstest.StartFaultyCluster(t, 3)
	writer := openReplicated(t, ctx, "writer", c.ClientURLs("writer"))
	conv := "elected"
	stream := writer.Names().EventsStreamOf(conv)
	seq, err := writer.Append(ctx, conv, 0, user(conv, "r1", 0, "hello"))
	require.NoError(t, err)
	waitStreamCurrent(t, ctx, c, stream)
	follower := (c.StreamLeader(stream) + 1) % c.N()
	reader := openReplicated(t, ctx, "reader", c.ClientURL("reader", follower))

	for i := range c.N() {
		c.IsolateRoutes(i)
	}
	// Until the follower's replica knows its stream has no leader.
	err = natstest.Retry(ctx, time.Second, func(ctx context.Context) error {
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := reader.Load(short, conv)
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == 10008 {
			return nil
		}
		return errors.New("the stream still answers")
	})
	require.NoError(t, err, "the reader's server must find its stream without a leader (else the case proves nothing)")

	heal := time.AfterFunc(500*time.Millisecond, c.Heal)
	defer heal.Stop()
	read, cancelRead := context.WithTimeout(ctx, 30*time.Second)
	defer cancelRead()
	turn, err := reader.Load(read, conv)
	require.NoError(t, err, "the read waits for the stream's leader while its context allows")
	assert.Equal(t, []string{"hello"}, texts(turn))
	assert.Equal(t, seq, turn.Seq)
}
