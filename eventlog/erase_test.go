package eventlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

func TestErase(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	js := l.JetStream()

	// Two conversations whose IDs share a prefix: erasing one must not
	// touch the other.
	var seq uint64
	var err error
	for i, text := range []string{"one", "two", "three"} {
		seq, err = l.Append(ctx, "c1", seq, user("c1", "r1", i, text))
		require.NoError(t, err)
	}
	_, err = l.Append(ctx, "c1x", 0, user("c1x", "r2", 0, "keep me"))
	require.NoError(t, err)
	turn, err := l.Load(ctx, "c1")
	require.NoError(t, err)
	last, err := l.Last(ctx, "c1")
	require.NoError(t, err)
	require.NoError(t, l.SaveSnapshot(ctx, turn, eventlog.StepID(last.Cause, last.Step)))

	// Pending requests of both, as a client publishes them.
	for _, conv := range []string{"c1", "c1", "c1x"} {
		_, err := js.Publish(ctx, l.Names().ChatSubject(conv), []byte(`{"text":"pending"}`))
		require.NoError(t, err)
	}

	got, err := l.Erase(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, eventlog.Erased{Messages: 3, Snapshot: true, Requests: 2, History: true}, got, "the load wrote a history cache")

	gone, err := l.Load(ctx, "c1")
	require.NoError(t, err)
	assert.Empty(t, gone.Blocks)
	assert.Zero(t, gone.Seq)
	assert.Zero(t, gone.Events)
	n, err := l.LastSeq(ctx, "c1")
	require.NoError(t, err)
	assert.Zero(t, n)

	kept, err := l.Load(ctx, "c1x")
	require.NoError(t, err)
	assert.Equal(t, []string{"keep me"}, texts(kept))
	reqs, err := js.Stream(ctx, l.Names().RequestsStream)
	require.NoError(t, err)
	info, err := reqs.Info(ctx, jetstream.WithSubjectFilter(l.Names().Prefix+".chat.*.*"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.State.Msgs, "only c1x's request is left")
	for subj := range info.State.Subjects {
		assert.Equal(t, "c1x", l.Names().ConversationOf(subj))
	}

	t.Run("again is a no-op", func(t *testing.T) {
		again, err := l.Erase(ctx, "c1")
		require.NoError(t, err)
		assert.Equal(t, eventlog.Erased{}, again)
	})
	t.Run("the ID starts empty afterwards", func(t *testing.T) {
		_, err := l.Append(ctx, "c1", 0, user("c1", "r3", 0, "fresh"))
		require.NoError(t, err)
		fresh, err := l.Load(ctx, "c1")
		require.NoError(t, err)
		assert.Equal(t, []string{"fresh"}, texts(fresh))
		assert.Equal(t, 1, fresh.Events)
	})
	t.Run("a hostile ID is refused", func(t *testing.T) {
		_, err := l.Erase(ctx, "c1.>")
		assert.ErrorIs(t, err, events.ErrInvalidConversationID)
		kept, err := l.Load(ctx, "c1x")
		require.NoError(t, err)
		assert.Len(t, kept.Blocks, 1)
	})
}

// TestHoldsAndErasedAfter: what a writer asks after a refused append, on
// one event stream and on shards: the log holds a stored step until its
// conversation is erased (not another conversation's step by its
// sequence), and the erasure's note is after a time stamped before it.
func TestHoldsAndErasedAfter(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			ctx := context.Background()
			l, err := eventlog.Open(ctx, natstest.Start(t).Conn, eventlog.WithEventShards(shards))
			require.NoError(t, err)
			before := time.Now().UTC().Add(-time.Second)
			erased, err := l.ErasedAfter(ctx, "c1", before)
			require.NoError(t, err)
			assert.False(t, erased, "nothing erased")

			seq, err := l.Append(ctx, "c1", 0, user("c1", "r1", 0, "one"))
			require.NoError(t, err)
			other, err := l.Append(ctx, "c2", 0, user("c2", "r2", 0, "two"))
			require.NoError(t, err)
			for conv, s := range map[string]uint64{"c1": seq, "c2": other} {
				held, err := l.Holds(ctx, conv, s)
				require.NoError(t, err)
				assert.True(t, held, "%s holds its step %d", conv, s)
			}
			if l.Names().EventsStreamOf("c1") == l.Names().EventsStreamOf("c2") {
				held, err := l.Holds(ctx, "c1", other)
				require.NoError(t, err)
				assert.False(t, held, "c2's step is not c1's")
			}

			_, err = l.Erase(ctx, "c1")
			require.NoError(t, err)
			held, err := l.Holds(ctx, "c1", seq)
			require.NoError(t, err)
			assert.False(t, held, "the erased step is gone")
			held, err = l.Holds(ctx, "c2", other)
			require.NoError(t, err)
			assert.True(t, held, "the other conversation's step stays")
			erased, err = l.ErasedAfter(ctx, "c1", before)
			require.NoError(t, err)
			assert.True(t, erased, "erased after a time before the erasure")
			erased, err = l.ErasedAfter(ctx, "c1", time.Now().UTC().Add(time.Second))
			require.NoError(t, err)
			assert.False(t, erased, "not after a time after it")
			erased, err = l.ErasedAfter(ctx, "c2", before)
			require.NoError(t, err)
			assert.False(t, erased, "c2 was not erased")
		})
	}
}
