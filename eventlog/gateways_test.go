package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestRunningGatewaysList: a gateway's entry is listed while it is there,
// latest seen first, and gone once deleted; before any gateway ran there
// is no list (and no error); what another client writes into the bucket
// is not listed as a gateway.
func TestRunningGatewaysList(t *testing.T) {
	s := natstest.Start(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	none, err := l.ListGateways(ctx)
	require.NoError(t, err)
	assert.Empty(t, none, "no gateway ever ran")

	g, err := l.Gateways(ctx)
	require.NoError(t, err)
	now := time.Now().UTC()
	require.NoError(t, g.Put(ctx, eventlog.GatewayPresence{Instance: "GWA", Listen: "0.0.0.0:8090", Started: now, Seen: now.Add(-time.Hour)}))
	require.NoError(t, g.Put(ctx, eventlog.GatewayPresence{Instance: "GWB", Started: now, Seen: now}))
	require.NoError(t, s.Conn.Publish("$KV.TURNLOG_GATEWAYS.junk", []byte("not json")))
	require.NoError(t, s.Conn.Publish("$KV.TURNLOG_GATEWAYS.GWC", []byte(`{"instance":"other"}`)))
	require.NoError(t, s.Conn.Flush())
	assert.Error(t, g.Put(ctx, eventlog.GatewayPresence{Instance: "a.b"}), "not an instance ID")

	list, err := l.ListGateways(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "GWB", list[0].Instance, "latest seen first")
	assert.True(t, list[0].Running(time.Now()))
	assert.Equal(t, "0.0.0.0:8090", list[1].Listen)
	assert.False(t, list[1].Running(time.Now()), "not seen for an hour")
	assert.False(t, eventlog.GatewayPresence{Seen: time.Now().Add(20 * time.Hour)}.Running(time.Now()), "an entry that says it will be seen tomorrow")

	require.NoError(t, g.Delete(ctx, "GWB"))
	list, err = l.ListGateways(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "GWA", list[0].Instance)
}
