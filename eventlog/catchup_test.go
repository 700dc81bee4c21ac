package eventlog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestCatchUpEqualsLoad: a Turn loaded earlier and brought up to date with
// CatchUp is the Turn Load gives, whoever wrote the steps in between and
// whatever else the stream holds; after an erase and a rewrite, CatchUp
// notices the Turn no longer matches and loads afresh.
func TestCatchUpEqualsLoad(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	var seq, other uint64
	var err error
	for i := 0; i < 5; i++ {
		seq, err = l.Append(ctx, "c", seq, user("c", fmt.Sprintf("r%d", i), 0, fmt.Sprintf("hello %d", i)))
		require.NoError(t, err)
	}
	old, err := l.Load(ctx, "c")
	require.NoError(t, err)
	for i := 5; i < 12; i++ {
		// Interleaved with another conversation, as on a busy stream.
		other, err = l.Append(ctx, "other", other, user("other", fmt.Sprintf("o%d", i), 0, "noise"))
		require.NoError(t, err)
		seq, err = l.Append(ctx, "c", seq, reply("c", fmt.Sprintf("r%d", i), 0, fmt.Sprintf("answer %d", i)))
		require.NoError(t, err)
	}
	want, err := l.Load(ctx, "c")
	require.NoError(t, err)
	got, err := l.CatchUp(ctx, old.Clone())
	require.NoError(t, err)
	assert.Equal(t, want.Events, got.Events)
	assert.Equal(t, want.Seq, got.Seq)
	assert.Equal(t, texts(want), texts(got))

	// Already current: nothing changes.
	again, err := l.CatchUp(ctx, got.Clone())
	require.NoError(t, err)
	assert.Equal(t, texts(want), texts(again))
	assert.Equal(t, want.Seq, again.Seq)

	// Erased and written anew: the old Turn's last message is gone.
	_, err = l.Erase(ctx, "c")
	require.NoError(t, err)
	_, err = l.Append(ctx, "c", 0, user("c", "fresh", 0, "a new start"))
	require.NoError(t, err)
	fresh, err := l.CatchUp(ctx, want.Clone())
	require.NoError(t, err)
	assert.Equal(t, []string{"a new start"}, texts(fresh), "nothing of the erased conversation comes back")
	assert.Equal(t, 1, fresh.Events)
}
