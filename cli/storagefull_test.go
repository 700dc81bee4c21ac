package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/storagetest"
)

// Issue 24: with JetStream's storage full, `turnlog chat` retried until its
// deadline and blamed the network. It is refused at once, naming the
// cause and what to do.
func TestChatStorageFull(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(8<<20))
	l, err := eventlog.Open(context.Background(), srv.Conn, eventlog.WithStorageBudget(8<<20))
	require.NoError(t, err)
	storagetest.Fill(t, l)
	e := &auditEnv{t: t, url: srv.ClientURL(), log: l}
	_, errOut, code := e.run("", "chat", "--timeout", "20s", "-m", "hello", "full")
	assert.NotZero(t, code)
	assert.Contains(t, errOut, "JetStream storage is full: ")
	assert.Contains(t, errOut, "raise --max-store")
	assert.NotContains(t, errOut, "may still be answered", "nothing was queued: %s", errOut)
}
