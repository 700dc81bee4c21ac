package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/projector"
)

func openLog(t *testing.T, srv *natstest.Server, opts ...eventlog.Option) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(context.Background(), srv.Conn, opts...)
	require.NoError(t, err)
	return l
}

func user(conv, cause string, step int, text string) events.Event {
	return events.New(conv, cause, step, "test", events.UserAppended{BlockID: ulid.Make().String(), Text: text})
}

func reply(conv, cause string, step int, text string) events.Event {
	return events.New(conv, cause, step, "test", events.LLMTextAppended{BlockID: ulid.Make().String(), Text: text})
}

func texts(turn *projector.Turn) []string {
	var out []string
	for _, b := range turn.Blocks {
		out = append(out, b.Text)
	}
	return out
}

func TestAppendAndLoad(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))

	seq, err := l.Append(ctx, "c1", 0, user("c1", "r1", 0, "hello"))
	require.NoError(t, err)
	seq, err = l.Append(ctx, "c1", seq, reply("c1", "r1", 1, "hi"), reply("c1", "r1", 1, "there"))
	require.NoError(t, err)

	turn, err := l.Load(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, []string{"hello", "hi", "there"}, texts(turn))
	assert.Equal(t, 3, turn.Events)
	assert.Equal(t, seq, turn.Seq)

	at2, err := l.LoadAt(ctx, "c1", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"hello", "hi"}, texts(at2), "position 2 falls inside the second message")

	_, err = l.LoadAt(ctx, "c1", 4)
	assert.ErrorIs(t, err, eventlog.ErrNotFound)

	empty, err := l.Load(ctx, "nobody")
	require.NoError(t, err)
	assert.Zero(t, empty.Seq)
	assert.Empty(t, empty.Blocks)
}

func TestAppendConflict(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))

	seq, err := l.Append(ctx, "c", 0, user("c", "r1", 0, "one"))
	require.NoError(t, err)

	_, err = l.Append(ctx, "c", 0, user("c", "r2", 0, "stale writer"))
	require.Error(t, err)
	assert.ErrorIs(t, err, eventlog.ErrConflict)
	var ce *eventlog.ConflictError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, uint64(0), ce.Expected)
	assert.Equal(t, seq, ce.Actual)

	turn, err := l.Load(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, []string{"one"}, texts(turn), "the conflicting append stored nothing")
}

func TestAppendRetryIsStoredOnce(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))

	step := user("c", "req-1", 0, "once")
	seq1, err := l.Append(ctx, "c", 0, step)
	require.NoError(t, err)
	// The same step again, as after a lost ack: same cause, step, expected seq.
	seq2, err := l.Append(ctx, "c", 0, step)
	require.NoError(t, err)
	assert.Equal(t, seq1, seq2)

	var n int
	for _, err := range l.Events(ctx, "c") {
		require.NoError(t, err)
		n++
	}
	assert.Equal(t, 1, n)
}

func TestConcurrentWritersLoseNothing(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	const writers, each = 8, 500

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var expected uint64
			for i := 0; i < each; i++ {
				ev := user("shared", fmt.Sprintf("w%d", w), i, fmt.Sprintf("w%d-%d", w, i))
				for {
					seq, err := l.Append(ctx, "shared", expected, ev)
					if err == nil {
						expected = seq
						break
					}
					if !errors.Is(err, eventlog.ErrConflict) {
						errs <- err
						return
					}
					if expected, err = l.LastSeq(ctx, "shared"); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	next := make([]int, writers)
	seen := map[string]bool{}
	total := 0
	for rec, err := range l.Events(ctx, "shared") {
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
	assert.Equal(t, writers*each, total)
}

func TestRestartKeepsEverything(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	var seq uint64
	var err error
	for i := 0; i < 10; i++ {
		seq, err = l.Append(ctx, "durable", seq, user("durable", "r", i, fmt.Sprint(i)))
		require.NoError(t, err)
	}
	before, err := l.Load(ctx, "durable")
	require.NoError(t, err)
	srv.Stop()

	srv2 := natstest.StartIn(t, srv.Dir)
	l2 := openLog(t, srv2)
	after, err := l2.Load(ctx, "durable")
	require.NoError(t, err)
	assert.Equal(t, before.Blocks, after.Blocks)
	assert.Equal(t, before.Seq, after.Seq)
	_, err = l2.Append(ctx, "durable", after.Seq, user("durable", "r", 10, "after restart"))
	require.NoError(t, err)
}

func TestOpenIsIdempotent(t *testing.T) {
	srv := natstest.Start(t)
	openLog(t, srv)
	openLog(t, srv)
}

func TestCauseReusedAcrossConversationsIsRefused(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "a", 0, user("a", "same-request", 0, "in a"))
	require.NoError(t, err)

	_, err = l.Append(ctx, "b", 0, user("b", "same-request", 0, "in b"))
	assert.ErrorIs(t, err, eventlog.ErrCauseReused, "a silent duplicate drop would lose b's step")

	a, err := l.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"in a"}, texts(a))
}
