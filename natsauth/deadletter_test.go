package natsauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// TestDeadLettersUnderRoles: with authentication on, a worker can store
// dead letters (a bad conversation ID, and the literal wildcard subjects,
// which it finds and deletes from the requests stream), and a client can
// count and list them, with no permission refused.
func TestDeadLettersUnderRoles(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth())
	ctx := context.Background()
	_, err := eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
	require.NoError(t, err)
	wc := connectAs(t, srv, natsauth.Worker)
	startWorker(t, wc.open(t), wc.nc)
	cc := connectAs(t, srv, natsauth.Client)
	cl := cc.open(t, eventlog.ReadOnly())

	p := cl.Names().Prefix
	for _, subject := range []string{p + ".chat.*", p + ".chat.>", p + ".chat.evil$id"} {
		_, err := cl.JetStream().Publish(ctx, subject, []byte(`{"text":"hi"}`))
		require.NoError(t, err, subject)
	}
	require.Eventually(t, func() bool {
		n, err := cl.DeadLetterCount(ctx)
		require.NoError(t, err)
		return n == 3
	}, 30*time.Second, 50*time.Millisecond, "three dead letters")
	dead, err := cl.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Len(t, dead, 3)
	cc.assertNoRefusal(t)
	wc.assertNoRefusal(t)
}
