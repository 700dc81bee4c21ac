package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// fillStore appends 60 KB steps to a conversation of l until JetStream's
// storage refuses one.
func fillStore(t *testing.T, l *eventlog.Log) {
	t.Helper()
	text := strings.Repeat("f", 60<<10)
	var seq uint64
	for i := 0; ; i++ {
		require.Less(t, i, 10_000, "the storage never filled")
		s, err := l.Append(context.Background(), "filler", seq, events.New("filler", fmt.Sprint("fill", i), 0, "test", events.UserAppended{BlockID: fmt.Sprint("b", i), Text: text}))
		if err != nil {
			require.ErrorIs(t, err, eventlog.ErrStorageFull)
			return
		}
		seq = s
	}
}

// Issue 24: with JetStream's storage full, `turnlog chat` retried until its
// deadline and blamed the network. It is refused at once, naming the
// cause and what to do.
func TestChatStorageFull(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(8<<20))
	l, err := eventlog.Open(context.Background(), srv.Conn, eventlog.WithStorageBudget(8<<20))
	require.NoError(t, err)
	fillStore(t, l)
	e := &auditEnv{t: t, url: srv.ClientURL(), log: l}
	_, errOut, code := e.run("", "chat", "--timeout", "20s", "-m", "hello", "full")
	assert.NotZero(t, code)
	assert.Contains(t, errOut, "JetStream storage is full: ")
	assert.Contains(t, errOut, "raise --max-store")
	assert.NotContains(t, errOut, "may still be answered", "nothing was queued: %s", errOut)
}
