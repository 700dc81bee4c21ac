package deploy_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/freeport"
	"github.com/turnlog/turnlog/natsauth"
)

// roleSeeds is roleKeys with the seeds kept, to connect as each role.
func roleSeeds(t *testing.T) map[natsauth.Role]nkeys.KeyPair {
	t.Helper()
	out := map[natsauth.Role]nkeys.KeyPair{}
	for _, r := range natsauth.Roles {
		kp, err := nkeys.CreateUser()
		require.NoError(t, err)
		pub, err := kp.PublicKey()
		require.NoError(t, err)
		t.Setenv(natsauth.EnvVar(r), pub)
		out[r] = kp
	}
	return out
}

// connectRole connects to url as role r, signing with its key, with the
// role's inbox prefix.
func connectRole(t *testing.T, url string, r natsauth.Role, kp nkeys.KeyPair) *nats.Conn {
	t.Helper()
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	nc, err := nats.Connect(url, nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(natsauth.InboxPrefix(r)), nats.Name("deploy-test-"+string(r)))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// TestTheClusterServesTheRoles: the three nodes, started from the real
// configurations (auth.conf's accounts, cluster.conf's route credential)
// with JetStream and moved to loopback ports, form a JetStream cluster
// whose streams are in turnlog's account. The client role, in an account
// of its own, reads a conversation replicated on the three nodes through
// its imports, from any node, and sends a chat request, which is stored
// and acknowledged; an answer it aims at the conversation's events
// subject is not stored; its status ping reaches a worker on another node
// and the worker's status comes back.
func TestTheClusterServesTheRoles(t *testing.T) {
	keys := roleSeeds(t)
	dir := configDir(t, true)
	ports := freeport.Ports(t, 6)
	var opts []*server.Options
	for i, n := range nodes {
		o, err := server.ProcessConfigFile(filepath.Join(dir, "nats-"+n+".conf"))
		require.NoError(t, err)
		var routes []*url.URL
		for _, u := range o.Routes {
			for j, m := range nodes {
				if u.Hostname() == m && j != i {
					routes = append(routes, &url.URL{Scheme: u.Scheme, User: u.User, Host: fmt.Sprintf("127.0.0.1:%d", ports[3+j])})
				}
			}
		}
		require.Len(t, routes, 2, "%s's routes to the other nodes", n)
		o.Host, o.Port, o.HTTPPort = "127.0.0.1", ports[i], 0
		o.Cluster.Host, o.Cluster.Port = "127.0.0.1", ports[3+i]
		o.Routes, o.StoreDir = routes, t.TempDir()
		o.NoLog, o.NoSigs = true, true
		opts = append(opts, o)
	}
	var urls []string
	var servers []*server.Server
	for _, o := range opts {
		s, err := server.NewServer(o)
		require.NoError(t, err)
		s.Start()
		t.Cleanup(s.Shutdown)
		servers = append(servers, s)
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin := connectRole(t, urls[0], natsauth.Admin, keys[natsauth.Admin])
	// As natstest's clusters: an R3 stream is placed once the meta leader
	// knows every server and every server follows it.
	require.Eventually(t, func() bool {
		leader := false
		for _, s := range servers {
			if !s.JetStreamIsCurrent() {
				return false
			}
			leader = leader || (s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) == len(servers))
		}
		return leader
	}, 45*time.Second, 25*time.Millisecond, "the cluster elects a JetStream meta leader that knows the three servers")
	l, err := eventlog.Open(ctx, admin, eventlog.WithReplicas(3))
	require.NoError(t, err, "the admin provisions the streams")
	_, err = l.Append(ctx, "c", 0, events.New("c", "r0", 0, "test", events.UserAppended{BlockID: ulid.Make().String(), Text: "replicated hello"}))
	require.NoError(t, err)
	info, err := l.JetStream().Stream(ctx, l.Names().EventStreams()[0])
	require.NoError(t, err)
	si, err := info.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, si.Config.Replicas)

	for i, u := range urls {
		client := connectRole(t, u, natsauth.Client, keys[natsauth.Client])
		cl, err := eventlog.Open(ctx, client, eventlog.ReadOnly())
		require.NoError(t, err, "the client opens the log on node %d", i+1)
		turn, err := cl.Load(ctx, "c")
		require.NoError(t, err, "the client reads the conversation on node %d", i+1)
		require.Len(t, turn.Blocks, 1)
		assert.Equal(t, "replicated hello", turn.Blocks[0].Text)
	}

	client := connectRole(t, urls[1], natsauth.Client, keys[natsauth.Client])
	ack, err := l.JetStream().Stream(ctx, l.Names().RequestsStream)
	require.NoError(t, err)
	before, err := ack.Info(ctx)
	require.NoError(t, err)
	msg := nats.NewMsg(l.Names().ChatSubject("c"))
	msg.Data = []byte(`{"text":"hi"}`)
	msg.Header.Set(nats.MsgIdHdr, ulid.Make().String())
	reply, err := client.RequestMsgWithContext(ctx, msg)
	require.NoError(t, err)
	assert.Contains(t, string(reply.Data), `"stream"`, "the chat request's acknowledgement reaches the client: %s", reply.Data)
	after, err := ack.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, before.State.Msgs+1, after.State.Msgs, "the chat request is stored")

	events0, err := info.Info(ctx)
	require.NoError(t, err)
	require.NoError(t, client.PublishRequest("$JS.API.STREAM.INFO."+l.Names().EventStreams()[0], l.Names().EventsSubject("c"), nil))
	require.NoError(t, client.FlushWithContext(ctx))
	time.Sleep(200 * time.Millisecond)
	events1, err := info.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, events0.State.Msgs, events1.State.Msgs, "an answer the client aims at an events subject is not stored")

	// The status ping, a stream turnlog's account imports from the
	// clients' (no response is tracked for it), reaches a worker on
	// another node, and the worker's status the client.
	wk := connectRole(t, urls[2], natsauth.Worker, keys[natsauth.Worker])
	pings, err := wk.SubscribeSync(l.Names().WorkersPing())
	require.NoError(t, err)
	statuses, err := client.SubscribeSync(l.Names().WorkersStatus())
	require.NoError(t, err)
	require.Eventually(t, func() bool { // until each node knows of the other's subscription
		if client.Publish(l.Names().WorkersPing(), nil) != nil {
			return false
		}
		_, err := pings.NextMsg(100 * time.Millisecond)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "a worker on node 3 hears the client's ping sent on node 2")
	require.Eventually(t, func() bool {
		if wk.Publish(l.Names().WorkersStatus(), []byte(`{"id":"w"}`)) != nil {
			return false
		}
		_, err := statuses.NextMsg(100 * time.Millisecond)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the client on node 2 hears the worker's status from node 3")
}
