package eventlog_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// convInShard finds a conversation ID (prefix-<n>) that hashes to shard k.
func convInShard(prefix string, k, shards int) string {
	for n := 0; ; n++ {
		c := fmt.Sprintf("%s-%d", prefix, n)
		if eventlog.ShardOf(c, shards) == k {
			return c
		}
	}
}

func TestShardOfIsNATSPartition(t *testing.T) {
	// The documented formula, computed here independently: FNV-1a 32 of
	// the ID modulo N, what nats-server's partition(N,1) computes.
	for _, c := range []string{"a", "conv-1", "01J9ZQ3V", "x_y-z"} {
		h := fnv.New32a()
		h.Write([]byte(c))
		assert.Equal(t, int(h.Sum32()%3), eventlog.ShardOf(c, 3), c)
	}
	assert.Equal(t, 0, eventlog.ShardOf("anything", 1))
	n := eventlog.NamesFor("turnlog")
	assert.Equal(t, "TURNLOG_EVENTS", n.EventsStreamOf("abc"), "one shard: the stream of before")
	assert.Equal(t, "turnlog.events.abc", n.EventsSubject("abc"), "one shard: the subject of before")
	n3 := n.WithEventShards(3)
	c := convInShard("c", 2, 3)
	assert.Equal(t, "TURNLOG_EVENTS_2", n3.EventsStreamOf(c))
	assert.Equal(t, "turnlog.events.2."+c, n3.EventsSubject(c))
	assert.Equal(t, []string{"TURNLOG_EVENTS_0", "TURNLOG_EVENTS_1", "TURNLOG_EVENTS_2"}, n3.EventStreams())
}

// TestShardedSingleServer: with 3 shards every conversation is stored in
// its shard's stream under the documented subject, readable there by a
// plain NATS client; the count is recorded, another count is refused, and
// an attached log (as chat uses) finds the conversation.
func TestShardedSingleServer(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithEventShards(3))
	require.NoError(t, err)
	js := l.JetStream()

	for k := range 3 {
		c := convInShard("s", k, 3)
		seq, err := l.Append(ctx, c, 0, user(c, "r-"+c, 0, "hello "+c))
		require.NoError(t, err)
		assert.Equal(t, uint64(1), seq, "each shard numbers its own messages")

		// Any NATS client: the stream and subject the README documents.
		stream, err := js.Stream(ctx, fmt.Sprintf("TURNLOG_EVENTS_%d", k))
		require.NoError(t, err)
		m, err := stream.GetLastMsgForSubject(ctx, fmt.Sprintf("turnlog.events-admin.%d.%s", k, c))
		require.NoError(t, err)
		assert.NotEmpty(t, m.Data)

		turn, err := l.Load(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, []string{"hello " + c}, texts(turn))
	}
	_, err = js.Stream(ctx, "TURNLOG_EVENTS")
	assert.ErrorIs(t, err, jetstream.ErrStreamNotFound, "a sharded installation has no unsharded stream")

	convs, err := l.Conversations(ctx)
	require.NoError(t, err)
	assert.Len(t, convs, 3)

	// Reopened without a count: the recorded one.
	again, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	assert.Equal(t, 3, again.Names().Shards())
	// Another count is refused, with what to do.
	_, err = eventlog.Open(ctx, srv.Conn, eventlog.WithEventShards(2))
	require.ErrorIs(t, err, eventlog.ErrShardsDiffer)
	assert.Contains(t, err.Error(), "--event-shards 3")
	_, err = eventlog.Open(ctx, srv.Conn, eventlog.WithEventShards(1))
	require.ErrorIs(t, err, eventlog.ErrShardsDiffer)

	// An attached log learns the count on first use.
	att, err := eventlog.Attach(srv.Conn)
	require.NoError(t, err)
	c := convInShard("s", 1, 3)
	last, err := att.LastSeq(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last)
	var got []string
	for r, err := range att.Events(ctx, c) {
		require.NoError(t, err)
		got = append(got, string(r.Type))
	}
	assert.Equal(t, []string{"user.appended"}, got)

	// Erase purges the conversation's own shard only.
	erased, err := l.Erase(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), erased.Messages)
	convs, err = l.Conversations(ctx)
	require.NoError(t, err)
	assert.Len(t, convs, 2)
}

// TestUnshardedRefusesShards: an existing installation with one event
// stream is not resharded by a later Open.
func TestUnshardedRefusesShards(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	_, err = l.Append(ctx, "c", 0, user("c", "r1", 0, "hi"))
	require.NoError(t, err)
	_, err = eventlog.Open(ctx, srv.Conn, eventlog.WithEventShards(3))
	require.ErrorIs(t, err, eventlog.ErrShardsDiffer)
	assert.Contains(t, err.Error(), "--event-shards 1")
	_, err = l.JetStream().Stream(ctx, "TURNLOG_EVENTS_0")
	assert.ErrorIs(t, err, jetstream.ErrStreamNotFound, "the refused Open created nothing")
}

// TestShardLeadersSpreadAndNodeLoss: on a 3-node cluster, 3 R3 shards end
// up led by three distinct servers; when one server is lost, every
// shard's conversations can still be written and read, and once it is
// back the leaders spread again.
func TestShardLeadersSpreadAndNodeLoss(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := natstest.StartCluster(t, 3)
	s := openClusterLog(t, c, eventlog.WithEventShards(3))
	l := s.log
	leaders := spreadLeaders(t, c, l)
	assert.ElementsMatch(t, []int{0, 1, 2}, leaders, "one shard leader per server")
	report, err := l.ShardLeaders(context.Background())
	require.NoError(t, err)
	names := map[string]bool{}
	for _, r := range report {
		names[r.Leader] = true
	}
	assert.Len(t, names, 3, "ShardLeaders reports three distinct leaders: %+v", report)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	convs := []string{convInShard("n", 0, 3), convInShard("n", 1, 3), convInShard("n", 2, 3)}
	seqs := make([]uint64, 3)
	write := func(round int) {
		for k, conv := range convs {
			cause := fmt.Sprintf("r%d-%s", round, conv)
			err := s.retry(ctx, func(ctx context.Context) error {
				seq, err := l.Append(ctx, conv, seqs[k], user(conv, cause, 0, cause))
				if err == nil {
					seqs[k] = seq
				}
				return err
			})
			require.NoError(t, err, "round %d, %s", round, conv)
		}
	}
	write(1)

	// Lose the server leading shard 0.
	lost := leaders[0]
	c.Stop(lost)
	write(2)
	for k, conv := range convs {
		s.visible(t, conv, seqs[k])
		turn, err := l.Load(ctx, conv)
		require.NoError(t, err)
		assert.Equal(t, []string{"r1-" + conv, "r2-" + conv}, texts(turn), "shard %d after losing a server", k)
	}

	c.Restart(lost)
	for _, st := range l.Names().EventStreams() {
		waitStreamCurrent(t, ctx, c, st)
	}
	after := spreadLeaders(t, c, l)
	assert.ElementsMatch(t, []int{0, 1, 2}, after, "the returned server leads a shard again")
	write(3)
}
