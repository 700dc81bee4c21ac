package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// openClusterAudit opens the log of a 3-node cluster with opts, retrying
// while its routes settle, and returns the environment status runs in
// (connected to every node).
func openClusterAudit(t *testing.T, c *natstest.Cluster, opts ...eventlog.Option) *auditEnv {
	t.Helper()
	nc := c.Dial(t, "setup")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var l *eventlog.Log
	require.NoError(t, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) (err error) {
		l, err = eventlog.Open(ctx, nc, opts...)
		return err
	}))
	require.NoError(t, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) error {
		_, err := l.Gateways(ctx) // the gateways' bucket, made on first use
		return err
	}))
	return &auditEnv{t: t, url: c.URLs(), log: l}
}

// statusRow is a stream or bucket row of status --json, as far as these
// tests read it.
type statusRow struct {
	Name        string `json:"name"`
	Unavailable string `json:"unavailable"`
	Messages    uint64 `json:"messages"`
}

// TestStatusWithAStreamWithoutLeader: on a 3-node cluster, the running
// gateways' bucket sits on one server (R1) and that server is down.
// status failed outright ("open event log: stream TURNLOG_EVENTS: ...:
// stream is offline" or "context deadline exceeded") and showed nothing;
// it shows every row it can read, marks the others unavailable with the
// reason, and exits 1 so that a monitoring script sees the trouble.
func TestStatusWithAStreamWithoutLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := natstest.StartCluster(t, 3)
	e := openClusterAudit(t, c, eventlog.WithReplicas(3))
	down := onOneServer(t, c, e.log, "KV_TURNLOG_GATEWAYS")
	c.Stop(down)
	waitLeaders(t, c, e.log.Names().EventStreams()...)

	start := time.Now()
	out, errOut, code := e.run("", "status")
	t.Logf("status:\n%s\n%s", out, errOut)
	assert.Equal(t, 1, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `TURNLOG_GATEWAYS +- +- +- +- +running gateways \(unavailable: no leader`, out)
	assert.Regexp(t, `TURNLOG_EVENTS +0 +0 +0 +3`, out, "the rows that have a leader are shown")
	assert.Contains(t, out, "requests pending: 0")
	assert.Contains(t, out, "WORKER")
	assert.Contains(t, errOut, "TURNLOG_GATEWAYS: no leader")
	assert.Less(t, time.Since(start), 20*time.Second)

	out, errOut, code = e.run("", "status", "--json")
	assert.Equal(t, 1, code, "%s\n%s", out, errOut)
	var st struct {
		Streams     []statusRow `json:"streams"`
		Buckets     []statusRow `json:"buckets"`
		Unavailable []string    `json:"unavailable"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	for _, s := range append(st.Streams, st.Buckets...) {
		if s.Name == "TURNLOG_GATEWAYS" {
			assert.Contains(t, s.Unavailable, "no leader", "%s", out)
		} else {
			assert.Empty(t, s.Unavailable, "%s", out)
		}
	}
	assert.Len(t, st.Unavailable, 1)
}

// onOneServer scales stream down to one replica, on a server that does not
// lead the JetStream meta group (so that stopping it costs no meta
// election), and returns that server.
func onOneServer(t *testing.T, c *natstest.Cluster, l *eventlog.Log, stream string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := l.JetStream()
	require.NoError(t, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) error {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		cfg := s.CachedInfo().Config
		cfg.Replicas = 1
		_, err = js.UpdateStream(ctx, cfg)
		return err
	}))
	// The stream has scaled down once its info lists no other replica.
	var on int
	require.Eventually(t, func() bool {
		s, err := js.Stream(ctx, stream)
		if err != nil || s.CachedInfo().Cluster == nil || len(s.CachedInfo().Cluster.Replicas) > 0 {
			return false
		}
		on = c.StreamLeader(stream)
		return on >= 0
	}, 30*time.Second, 100*time.Millisecond)
	if c.MetaLeader() == on {
		c.LeadMeta((on + 1) % c.N())
	}
	return on
}

// waitLeaders waits until each stream has a leader.
func waitLeaders(t *testing.T, c *natstest.Cluster, streams ...string) {
	t.Helper()
	for _, s := range streams {
		require.Eventually(t, func() bool { return c.StreamLeader(s) >= 0 }, 30*time.Second, 100*time.Millisecond, "%s has no leader", s)
	}
}

// TestStatusShowsADeadNode: with one server of three down, every row of
// status still read REPLICAS 3, as on a healthy cluster. Each row shows
// its leader and how many replicas are current, and names the offline
// ones, in the table and in --json.
func TestStatusShowsADeadNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := natstest.StartCluster(t, 3)
	e := openClusterAudit(t, c, eventlog.WithReplicas(3))
	down := (c.MetaLeader() + 1) % c.N() // no meta election
	downName := c.Server(down).Name()
	c.Stop(down)
	waitLeaders(t, c, "TURNLOG_EVENTS", "TURNLOG_REQUESTS", "KV_TURNLOG_THREADS")

	var out, errOut string
	var code int
	require.Eventually(t, func() bool {
		out, errOut, code = e.run("", "status")
		return code == 0
	}, 30*time.Second, time.Second, "%s\n%s", out, errOut)
	t.Logf("status:\n%s", out)
	assert.Regexp(t, `TURNLOG_EVENTS +0 +0 +0 +3 \(leader n\d, 2 current, offline: `+downName+`\)\n`, out)
	assert.Regexp(t, `TURNLOG_THREADS +0 +0 +0 +3 \(leader n\d, 2 current, offline: `+downName+`\) +gateway threading index\n`, out)

	out, errOut, code = e.run("", "status", "--json")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	type replicated struct {
		Name    string   `json:"name"`
		Leader  string   `json:"leader"`
		Current int      `json:"replicas_current"`
		Offline []string `json:"replicas_offline"`
	}
	var st struct {
		Streams []replicated `json:"streams"`
		Buckets []replicated `json:"buckets"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	for _, r := range append(st.Streams, st.Buckets...) {
		if r.Name == "TURNLOG_BACKGROUND" {
			continue // not created
		}
		assert.NotEmpty(t, r.Leader, "%s: %s", r.Name, out)
		assert.NotEqual(t, downName, r.Leader, r.Name)
		assert.Equal(t, 2, r.Current, "%s: %s", r.Name, out)
		assert.Equal(t, []string{downName}, r.Offline, "%s: %s", r.Name, out)
	}
}
