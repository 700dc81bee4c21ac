package natsauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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

// TestWorkerOpensAnInstallationFromBeforeTheLimits: a requests stream made
// before it had limits (nor dead letters) is opened by a worker, which may
// not change streams: the worker starts all the same, and an admin's Open
// applies the limits.
func TestWorkerOpensAnInstallationFromBeforeTheLimits(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth())
	ctx := context.Background()
	admin, err := eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
	require.NoError(t, err)
	s, err := admin.JetStream().Stream(ctx, admin.Names().RequestsStream)
	require.NoError(t, err)
	old := s.CachedInfo().Config
	old.MaxAge, old.MaxBytes, old.MaxMsgsPerSubject, old.Discard, old.DiscardNewPerSubject = 0, -1, -1, jetstream.DiscardOld, false
	_, err = admin.JetStream().UpdateStream(ctx, old)
	require.NoError(t, err)

	wc := connectAs(t, srv, natsauth.Worker)
	wl := wc.open(t)
	_, err = wl.Append(ctx, "w", 0, userEvent("w", "r1", 0, "still works"))
	require.NoError(t, err)

	_, err = eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
	require.NoError(t, err)
	s, err = admin.JetStream().Stream(ctx, admin.Names().RequestsStream)
	require.NoError(t, err)
	assert.Equal(t, eventlog.DefaultRequestLimits.MaxPerConversation, s.CachedInfo().Config.MaxMsgsPerSubject, "the admin's Open upgraded it")
}
