package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// logStore is one JetStream deployment the suite runs against, with what
// a case needs to know about it.
type logStore struct {
	log *eventlog.Log
	// writers and each size the concurrent-writers case: as many as the
	// store takes in a few seconds under -race on two cores.
	writers, each int
	// retry runs a request of a case until it gets an answer: a
	// replicated store may lose one in flight (at most once delivery),
	// a single server does not, so there it runs fn once.
	retry func(ctx context.Context, fn func(context.Context) error) error
	// visible returns once LastSeq, Last and the conflict path of Append
	// (direct gets, which any replica answers) show conv up to stream
	// sequence seq: on a replicated stream a follower may answer before
	// it holds the last acknowledged message (a majority has it, not
	// necessarily every replica). Reads of a whole conversation (Events,
	// Load, CatchUp) need no wait: they reach what the stream leader
	// holds (docs/storage.md, "Reads").
	visible func(t *testing.T, conv string, seq uint64)
}

// suiteLog is the log as one case sees it: the store's log, shared with
// the other cases, and the case's own namespace.
type suiteLog struct {
	*logStore
	ns string
}

// id names a conversation or a cause of this case. Cases share a log, and
// a message ID (<cause>:<step>) is unique across the whole stream, so
// causes need a namespace as much as conversations do.
func (s *suiteLog) id(name string) string { return s.ns + "-" + name }

// suiteCases are the log's guarantees, checked against every store: the
// single server and the 3-node cluster with R3 streams must not differ in
// anything a caller sees.
var suiteCases = []struct {
	name string
	run  func(t *testing.T, s *suiteLog)
	// skip names the stores where the case does not hold, and why.
	skip map[string]string
}{
	{"append and load", func(t *testing.T, s *suiteLog) {
		ctx := context.Background()
		c := s.id("c")
		seq, err := s.log.Append(ctx, c, 0, user(c, s.id("r1"), 0, "hello"))
		require.NoError(t, err)
		seq, err = s.log.Append(ctx, c, seq, reply(c, s.id("r1"), 1, "hi"), reply(c, s.id("r1"), 1, "there"))
		require.NoError(t, err)
		s.visible(t, c, seq)

		turn, err := s.log.Load(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, []string{"hello", "hi", "there"}, texts(turn))
		assert.Equal(t, 3, turn.Events)
		assert.Equal(t, seq, turn.Seq)

		at2, err := s.log.LoadAt(ctx, c, 2)
		require.NoError(t, err)
		assert.Equal(t, []string{"hello", "hi"}, texts(at2), "position 2 falls inside the second message")

		_, err = s.log.LoadAt(ctx, c, 4)
		assert.ErrorIs(t, err, eventlog.ErrNotFound)

		empty, err := s.log.Load(ctx, s.id("nobody"))
		require.NoError(t, err)
		assert.Zero(t, empty.Seq)
		assert.Empty(t, empty.Blocks)
	}, nil},
	// JetStream rejects a stale expected sequence with err_code 10071 on
	// a single server and 10164 on a replicated stream: both must be
	// ErrConflict.
	{"stale writer gets a conflict", func(t *testing.T, s *suiteLog) {
		ctx := context.Background()
		c := s.id("c")
		seq, err := s.log.Append(ctx, c, 0, user(c, s.id("r1"), 0, "one"))
		require.NoError(t, err)
		// The conflict is decided by the leader; the Actual it reports
		// is read like any other message.
		s.visible(t, c, seq)

		_, err = s.log.Append(ctx, c, 0, user(c, s.id("r2"), 0, "stale writer"))
		require.Error(t, err)
		assert.ErrorIs(t, err, eventlog.ErrConflict)
		var ce *eventlog.ConflictError
		require.True(t, errors.As(err, &ce))
		assert.Equal(t, uint64(0), ce.Expected)
		assert.Equal(t, seq, ce.Actual)

		turn, err := s.log.Load(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, []string{"one"}, texts(turn), "the conflicting append stored nothing")
	}, nil},
	{"retried step is stored once", func(t *testing.T, s *suiteLog) {
		ctx := context.Background()
		c := s.id("c")
		step := user(c, s.id("req-1"), 0, "once")
		seq1, err := s.log.Append(ctx, c, 0, step)
		require.NoError(t, err)
		// The retry's conflict path reads the stored step back.
		s.visible(t, c, seq1)
		// The same step again, as after a lost ack: same cause, step, expected seq.
		seq2, err := s.log.Append(ctx, c, 0, step)
		require.NoError(t, err)
		assert.Equal(t, seq1, seq2)

		var n int
		for _, err := range s.log.Events(ctx, c) {
			require.NoError(t, err)
			n++
		}
		assert.Equal(t, 1, n)
		// On R3 the leader checks the message ID before the expected
		// sequence (nats-server 2.15 checkMsgHeadersPreClusteredProposal):
		// the retry comes back as a duplicate of seq1, not as 10164, and
		// must still count as stored.
	}, nil},
	{"an old step redone after later steps is refused", func(t *testing.T, s *suiteLog) {
		ctx := context.Background()
		c := s.id("c")
		old := user(c, s.id("req-a"), 0, "first")
		seq1, err := s.log.Append(ctx, c, 0, old)
		require.NoError(t, err)
		seq2, err := s.log.Append(ctx, c, seq1, user(c, s.id("req-b"), 0, "second"))
		require.NoError(t, err)
		s.visible(t, c, seq2)

		// A writer still at the state before the old step: a conflict, so
		// it reloads and sees that the step and another after it landed.
		_, err = s.log.Append(ctx, c, 0, old)
		assert.ErrorIs(t, err, eventlog.ErrConflict)
		// A writer at the latest state re-sending the old step: refused
		// as a step that exists, not stored again.
		_, err = s.log.Append(ctx, c, seq2, old)
		assert.ErrorIs(t, err, eventlog.ErrStepExists)

		turn, err := s.log.Load(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, []string{"first", "second"}, texts(turn), "nothing stored twice")
	}, nil},
	{"concurrent writers lose nothing", func(t *testing.T, s *suiteLog) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared := s.id("shared")
		var (
			wg        sync.WaitGroup
			conflicts atomic.Int64
		)
		for w := range s.writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var expected uint64
				for i := range s.each {
					ev := user(shared, s.id(fmt.Sprintf("w%d", w)), i, fmt.Sprintf("w%d-%d", w, i))
					for {
						// Appends are idempotent (the step ID), so one
						// whose answer was lost is simply made again.
						var seq uint64
						err := s.retry(ctx, func(ctx context.Context) error {
							var err error
							seq, err = s.log.Append(ctx, shared, expected, ev)
							if errors.Is(err, eventlog.ErrConflict) {
								return nil
							}
							return err
						})
						if err != nil {
							t.Errorf("writer %d, append %d: %v", w, i, err)
							return
						}
						if seq != 0 {
							expected = seq
							break
						}
						conflicts.Add(1)
						err = s.retry(ctx, func(ctx context.Context) error {
							var err error
							expected, err = s.log.LastSeq(ctx, shared)
							return err
						})
						if err != nil {
							t.Errorf("writer %d: %v", w, err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		require.False(t, t.Failed())
		// No wait for the replicas: a read shows every acknowledged
		// append, whichever replica answers its direct gets.

		next := make([]int, s.writers)
		seen := map[string]bool{}
		total := 0
		for rec, err := range s.log.Events(ctx, shared) {
			require.NoError(t, err)
			total++
			text := rec.Payload.(events.UserAppended).Text
			require.False(t, seen[text], "duplicate %s", text)
			seen[text] = true
			var w, i int
			_, err := fmt.Sscanf(text, "w%d-%d", &w, &i)
			require.NoError(t, err)
			assert.Equal(t, next[w], i, "writer %d's events out of order", w)
			next[w] = i + 1
		}
		assert.Equal(t, s.writers*s.each, total, "every acknowledged append stored once")
		assert.Positive(t, conflicts.Load(), "the writers must have raced (else the check proves nothing)")
		t.Logf("%d conflicts retried", conflicts.Load())
	}, nil},
	// A Turn loaded earlier and brought up to date with CatchUp is the
	// Turn Load gives, whoever wrote the steps in between and whatever
	// else the stream holds; after an erase and a rewrite, CatchUp
	// notices the Turn no longer matches and loads afresh.
	{"catch up equals load", func(t *testing.T, s *suiteLog) {
		ctx := context.Background()
		c, o := s.id("c"), s.id("other")
		var seq, other uint64
		var err error
		for i := 0; i < 5; i++ {
			seq, err = s.log.Append(ctx, c, seq, user(c, s.id(fmt.Sprintf("r%d", i)), 0, fmt.Sprintf("hello %d", i)))
			require.NoError(t, err)
		}
		s.visible(t, c, seq)
		old, err := s.log.Load(ctx, c)
		require.NoError(t, err)
		for i := 5; i < 12; i++ {
			// Interleaved with another conversation, as on a busy stream.
			other, err = s.log.Append(ctx, o, other, user(o, s.id(fmt.Sprintf("o%d", i)), 0, "noise"))
			require.NoError(t, err)
			seq, err = s.log.Append(ctx, c, seq, reply(c, s.id(fmt.Sprintf("r%d", i)), 0, fmt.Sprintf("answer %d", i)))
			require.NoError(t, err)
		}
		s.visible(t, c, seq)
		want, err := s.log.Load(ctx, c)
		require.NoError(t, err)
		got, err := s.log.CatchUp(ctx, old.Clone())
		require.NoError(t, err)
		assert.Equal(t, want.Events, got.Events)
		assert.Equal(t, want.Seq, got.Seq)
		assert.Equal(t, texts(want), texts(got))

		// Already current: nothing changes.
		again, err := s.log.CatchUp(ctx, got.Clone())
		require.NoError(t, err)
		assert.Equal(t, texts(want), texts(again))
		assert.Equal(t, want.Seq, again.Seq)

		// Erased and written anew: the old Turn's last message is gone.
		_, err = s.log.Erase(ctx, c)
		require.NoError(t, err)
		seq, err = s.log.Append(ctx, c, 0, user(c, s.id("fresh"), 0, "a new start"))
		require.NoError(t, err)
		// A replica that holds the new message has applied the purge
		// before it.
		s.visible(t, c, seq)
		fresh, err := s.log.CatchUp(ctx, want.Clone())
		require.NoError(t, err)
		assert.Equal(t, []string{"a new start"}, texts(fresh), "nothing of the erased conversation comes back")
		assert.Equal(t, 1, fresh.Events)
	}, nil},
	{"forks are found as soon as they are stored", func(t *testing.T, s *suiteLog) {
		ctx := context.Background()
		a, f1, f2 := s.id("a"), s.id("f1"), s.id("f2")
		_, err := s.log.Append(ctx, a, 0, user(a, s.id("r1"), 0, "my address is 1 Main St"))
		require.NoError(t, err)
		_, err = replay.Fork(ctx, s.log, a, 0, f1)
		require.NoError(t, err)
		_, err = replay.Fork(ctx, s.log, f1, 0, f2)
		require.NoError(t, err)
		// No wait for the replicas: a fork made a moment ago is found
		// (the stream's leader answers on a cluster).
		var found eventlog.ForkSearch
		require.NoError(t, s.retry(ctx, func(ctx context.Context) (err error) {
			found, err = s.log.Forks(ctx, a)
			return err
		}))
		assert.Equal(t, []eventlog.Fork{{Conversation: f1, From: a, At: 1, Depth: 1}, {Conversation: f2, From: f1, At: 1, Depth: 2}}, found.Forks)
		assert.NotContains(t, uncheckedIDs(found.Unchecked), f1)
		assert.NotContains(t, uncheckedIDs(found.Unchecked), f2)
	}, nil},
}

// TestSuite runs every case of suiteCases against a single server and
// against a 3-node cluster with R3 streams. Each store is started once;
// the cases share its log and keep apart by their IDs.
func TestSuite(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) *logStore
	}{
		{"single", openSingleStore},
		{"r3", openClusterStore},
		{"r3-3shards", openShardedClusterStore},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			for _, tc := range suiteCases {
				t.Run(tc.name, func(t *testing.T) {
					if why, ok := tc.skip[st.name]; ok {
						t.Skip(why)
					}
					tc.run(t, &suiteLog{logStore: s, ns: strings.ReplaceAll(tc.name, " ", "_")})
				})
			}
		})
	}
}

// openSingleStore is the log on one embedded server, read and written
// through its in-process connection.
func openSingleStore(t *testing.T) *logStore {
	return &logStore{
		log:     openLog(t, natstest.Start(t)),
		writers: 8, each: 500,
		retry:   func(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) },
		visible: func(*testing.T, string, uint64) {},
	}
}

// openClusterStore is the log with R3 streams on a 3-node cluster, through
// a connection to every server, as `turnlog --nats-url a,b,c` makes.
func openClusterStore(t *testing.T) *logStore {
	return openClusterLog(t, natstest.StartCluster(t, 3))
}

// openClusterLog opens the log with R3 streams (and opts) on cluster c,
// and waits until every event stream has a leader and current replicas.
func openClusterLog(t *testing.T, c *natstest.Cluster, opts ...eventlog.Option) *logStore {
	nc := c.Dial(t, "suite")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A request can be lost while the routes of a cluster that just
	// formed settle, so each attempt is bounded and Open, idempotent, is
	// retried.
	var l *eventlog.Log
	err := natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) (err error) {
		l, err = eventlog.Open(ctx, nc, append([]eventlog.Option{eventlog.WithReplicas(3)}, opts...)...)
		return err
	})
	require.NoError(t, err)
	// The cases' appends are not retried (a retried write is what some of
	// them check), so the event streams must have a leader and every
	// replica caught up before they start.
	for _, stream := range l.Names().EventStreams() {
		waitStreamCurrent(t, ctx, c, stream)
	}

	return &logStore{
		log:     l,
		writers: 4, each: 100,
		retry: func(ctx context.Context, fn func(context.Context) error) error {
			return natstest.Retry(ctx, 10*time.Second, fn)
		},
		visible: func(t *testing.T, conv string, seq uint64) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// A direct get goes to any member of the stream's queue
			// group, the local replica or one across a route (nats-server
			// prefers local queue subscribers only for messages that came
			// over a route), so this proves one replica shows seq.
			err := natstest.Retry(ctx, 5*time.Second, func(ctx context.Context) error {
				last, err := l.LastSeq(ctx, conv)
				if err != nil {
					return err
				}
				if last < seq {
					return fmt.Errorf("%s: last sequence %d visible, want %d", conv, last, seq)
				}
				return nil
			})
			require.NoError(t, err)
			// Another replica may answer the next direct get, so wait
			// for every replica of the conversation's stream as well. A
			// raft follower is "current" once it applied what it knows to
			// be committed and heard from the leader within two
			// heartbeats, which one whose link to the leader is slow may
			// be without the last few appends: this narrows the window,
			// it does not close it.
			waitStreamCurrent(t, ctx, c, l.Names().EventsStreamOf(conv))
		},
	}
}

// waitStreamCurrent waits until stream has a leader and every running
// server of c holds it up to date.
func waitStreamCurrent(t *testing.T, ctx context.Context, c *natstest.Cluster, stream string) {
	t.Helper()
	err := natstest.Retry(ctx, time.Second, func(context.Context) error {
		if c.StreamLeader(stream) < 0 {
			return fmt.Errorf("no leader: %s", c.Describe(stream))
		}
		for i := range c.N() {
			if srv := c.Server(i); srv != nil && !srv.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				return fmt.Errorf("replica %d behind: %s", i, c.Describe(stream))
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// openShardedClusterStore is the log with 3 event shards of R3 streams on
// a 3-node cluster, their leaders spread over the three servers.
func openShardedClusterStore(t *testing.T) *logStore {
	c := natstest.StartCluster(t, 3)
	s := openClusterLog(t, c, eventlog.WithEventShards(3))
	spreadLeaders(t, c, s.log)
	return s
}

// spreadLeaders balances the event shards' leaders until each shard is led
// by another server, and returns the leading server of each shard.
func spreadLeaders(t *testing.T, c *natstest.Cluster, l *eventlog.Log) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	streams := l.Names().EventStreams()
	var leaders []int
	first := true
	err := natstest.Retry(ctx, 5*time.Second, func(ctx context.Context) error {
		leaders = leaders[:0]
		seen := map[int]bool{}
		for _, st := range streams {
			i := c.StreamLeader(st)
			if i < 0 {
				return fmt.Errorf("%s has no leader", st)
			}
			seen[i] = true
			leaders = append(leaders, i)
		}
		if first {
			t.Logf("event shard leaders as JetStream placed them: servers %v", leaders)
			first = false
		}
		if len(seen) == len(streams) {
			return nil
		}
		moved, err := l.BalanceLeaders(ctx)
		if err != nil {
			return err
		}
		// Let the elections the hand-overs started finish.
		time.Sleep(500 * time.Millisecond)
		return fmt.Errorf("leaders %v (asked %d hand-overs)", leaders, moved)
	})
	require.NoError(t, err)
	return leaders
}
