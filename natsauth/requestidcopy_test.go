package natsauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// TestACopiedClaimIsNoClaim: with the worker key, a direct get of a
// snapshot key holding another conversation's ID, aimed at a request ID's
// key in the request-IDs bucket, stored the server's answer there, and
// the bucket then said the ID was claimed by that conversation: the
// request's own conversation was refused it (found by the security
// re-probe). A stored copy of a direct get's answer is no claim: the ID
// is claimed afresh by the conversation that sends it.
func TestACopiedClaimIsNoClaim(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t, natstest.WithAuth())
	admin, err := eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
	require.NoError(t, err)
	names := admin.Names()
	wc := connectAs(t, srv, natsauth.Worker)
	_, err = wc.nc.Request("$KV."+names.SnapshotsBucket+".planted", []byte("someone-else"), 5*time.Second)
	require.NoError(t, err)
	rid := ulid.Make().String()
	require.NoError(t, wc.nc.PublishRequest("$JS.API.DIRECT.GET.KV_"+names.SnapshotsBucket+".$KV."+names.SnapshotsBucket+".planted", "$KV."+names.RequestIDsBucket+"."+rid, nil))
	require.NoError(t, wc.nc.Flush())
	kv, err := admin.JetStream().KeyValue(ctx, names.RequestIDsBucket)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		e, err := kv.Get(ctx, rid)
		return err == nil && string(e.Value()) == "someone-else"
	}, 5*time.Second, 20*time.Millisecond, "the copy is stored under the request ID")

	assert.NoError(t, admin.ClaimRequestID(ctx, rid, "victim"), "the copy is no claim: the ID is the victim's to claim")
	e, err := kv.Get(ctx, rid)
	require.NoError(t, err)
	assert.Equal(t, "victim", string(e.Value()))
	assert.ErrorIs(t, admin.ClaimRequestID(ctx, rid, "someone-else"), eventlog.ErrCauseReused, "and a real claim still holds")
}
