package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/internal/natstest"
)

// TestReadWaitsForALeaderStillApplying: a stream leader newly elected may
// answer a message get before it has applied the last steps its
// predecessor acknowledged (the fault matrix's events-leader partition
// made a client's read fail with "is gone"). A read whose last message is
// not there yet asks again for a while before it says the conversation was
// erased; a conversation erased during the read is still an error.
func TestReadWaitsForALeaderStillApplying(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := openLog(t, natstest.Start(t))

	var seq uint64
	var err error
	for i, text := range []string{"one", "two"} {
		seq, err = l.Append(ctx, "late", seq, user("late", "r1", i, text))
		require.NoError(t, err)
	}
	// The read began when the leader's last was the next message, which
	// this server stores only 200 ms later.
	done := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, err := l.Append(ctx, "late", seq, user("late", "r1", 2, "three"))
		done <- err
	}()
	n, err := l.ReadThrough(ctx, "late", seq+1)
	require.NoError(t, err, "the read must wait for the message the leader had")
	assert.Equal(t, 3, n, "every step, the late one included")
	require.NoError(t, <-done)

	// Erased: nothing comes, and the read says so.
	last, err := l.LastSeq(ctx, "late")
	require.NoError(t, err)
	_, err = l.Erase(ctx, "late")
	require.NoError(t, err)
	_, err = l.ReadThrough(ctx, "late", last)
	require.ErrorContains(t, err, "is gone")
}
