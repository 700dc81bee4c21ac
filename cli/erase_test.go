package cli

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/worker"
)

func TestEraseCommand(t *testing.T) {
	ctx := context.Background()
	// No worker: a sent request stays pending.
	e := newAuditEnv(t, false)
	pending := func() uint64 {
		s, err := e.log.JetStream().Stream(ctx, e.log.Names().RequestsStream)
		require.NoError(t, err)
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(e.log.Names().Prefix+".chat.*.secret"))
		require.NoError(t, err)
		return info.State.Msgs
	}
	exists := func(conv string) bool {
		seq, err := e.log.LastSeq(ctx, conv)
		require.NoError(t, err)
		return seq > 0
	}
	terminal := func(yes bool) {
		old := isTerminal
		isTerminal = func(any) bool { return yes }
		t.Cleanup(func() { isTerminal = old })
	}
	appendStep(t, e, "secret", events.UserAppended{BlockID: "u1", Text: "my address is 1 Main St"})
	appendStep(t, e, "secret", events.LLMTextAppended{BlockID: "l1", Text: "noted"})
	appendStep(t, e, "keep", events.UserAppended{BlockID: "u1", Text: "nothing private"})
	turn, err := e.log.Load(ctx, "secret")
	require.NoError(t, err)
	last, err := e.log.Last(ctx, "secret")
	require.NoError(t, err)
	require.NoError(t, e.log.SaveSnapshot(ctx, turn, eventlog.StepID(last.Cause, last.Step)))
	_, err = worker.Send(ctx, e.log, worker.Request{Conversation: "secret", Text: "pending"})
	require.NoError(t, err)
	require.Equal(t, uint64(1), pending())

	t.Run("refused without a terminal and without --yes", func(t *testing.T) {
		_, errOut, code := e.run("secret\n", "erase", "secret")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "stdin is not a terminal; pass --yes")
		assert.True(t, exists("secret"))
		assert.Equal(t, uint64(1), pending())
	})
	t.Run("a wrong confirmation erases nothing", func(t *testing.T) {
		terminal(true)
		_, errOut, code := e.run("keep\n", "erase", "secret")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, `you typed "keep"`)
		assert.True(t, exists("secret"))
		_, errOut, code = e.run("", "erase", "secret")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "no confirmation")
		assert.True(t, exists("secret"))
	})
	t.Run("typing the ID erases events, snapshot and pending requests", func(t *testing.T) {
		terminal(true)
		out, errOut, code := e.run("secret\n", "erase", "secret")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, "erased secret: 2 event messages, its snapshot and history cache, 1 pending request\n", out)
		assert.Contains(t, errOut, "Type the conversation ID to confirm")
		assert.False(t, exists("secret"))
		assert.Zero(t, pending())
		assert.True(t, exists("keep"))
	})
	t.Run("--yes", func(t *testing.T) {
		terminal(false)
		out, errOut, code := e.run("", "erase", "keep", "--yes")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, "erased keep: 1 event message, no snapshot, 0 pending requests\n", out)
		assert.False(t, exists("keep"))
		_, errOut, code = e.run("", "replay", "keep")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "no events")
	})
	t.Run("an ID nothing is stored under", func(t *testing.T) {
		// A typo said "erased nosuch: 0 event messages, ..." and exit 0,
		// as if a privacy erasure had been done; erasing again an
		// erased conversation is no more done.
		for _, id := range []string{"nosuch", "keep"} {
			out, errOut, code := e.run("", "erase", id, "--yes")
			assert.Equal(t, 2, code, out)
			assert.Empty(t, out)
			assert.Contains(t, errOut, "no conversation "+id+": nothing is stored under that ID, so nothing was erased")
		}
	})
	t.Run("a bad ID", func(t *testing.T) {
		_, errOut, code := e.run("", "erase", "a.>", "--yes")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "invalid conversation ID")
	})
}

func TestErasedLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  eventlog.Erased
		want string
	}{
		{name: "nothing", want: "erased c: 0 event messages, no snapshot, 0 pending requests"},
		{name: "snapshot and history", got: eventlog.Erased{Messages: 2, Snapshot: true, History: true, Requests: 1},
			want: "erased c: 2 event messages, its snapshot and history cache, 1 pending request"},
		{name: "snapshot alone", got: eventlog.Erased{Messages: 1, Snapshot: true},
			want: "erased c: 1 event message, its snapshot, 0 pending requests"},
		{name: "history alone", got: eventlog.Erased{Messages: 1, History: true},
			want: "erased c: 1 event message, no snapshot, its history cache, 0 pending requests"},
		{name: "threading", got: eventlog.Erased{Messages: 1, Threading: 2},
			want: "erased c: 1 event message, no snapshot, 0 pending requests, 2 gateway threading entries"},
		{name: "background", got: eventlog.Erased{Messages: 1, Threading: 1, Background: 1},
			want: "erased c: 1 event message, no snapshot, 0 pending requests, 1 gateway threading entry, 1 background response followed"},
		{name: "dead letters", got: eventlog.Erased{Messages: 1, DeadLetters: 2},
			want: "erased c: 1 event message, no snapshot, 0 pending requests, 2 dead letters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, erasedLine("c", tc.got))
		})
	}
}
