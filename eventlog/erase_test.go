package eventlog_test

import (
	"context"
	"testing"

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
