package natsauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// TestClientRepliesAreNeverStored: nats-server checks the subject a client
// publishes to, never the reply subject it names, and publishes the
// answer there. With the client key in turnlog's own account, the answer
// landed in whatever stream stores that subject (found by the security
// re-probes: a direct get of a purged key's marker, aimed at a key of the
// threading index or of the request IDs, kept its Nats-Rollup header and
// deleted every value of the key). The client key lives in an account of
// its own without JetStream: the answer to what it imports comes back in
// that account, on the subject it named, where no stream stores anything.
func TestClientRepliesAreNeverStored(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth())
	ctx := context.Background()
	admin, err := eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
	require.NoError(t, err)
	names := admin.Names()
	js := admin.JetStream()
	wc := connectAs(t, srv, natsauth.Worker)
	startWorker(t, wc.open(t), wc.nc)
	cc := connectAs(t, srv, natsauth.Client)
	cc.open(t, eventlog.ReadOnly())

	// What the attacks aim at: a key of the threading index, a claimed
	// request ID, and a conversation with a step.
	_, err = admin.Threads(ctx)
	require.NoError(t, err)
	threads, err := js.KeyValue(ctx, names.ThreadsBucket)
	require.NoError(t, err)
	_, err = threads.Put(ctx, "victim", []byte("conv-a"))
	require.NoError(t, err)
	require.NoError(t, admin.ClaimRequestID(ctx, "01VICTIMREQUESTID", "conv-b"))
	ids, err := js.KeyValue(ctx, names.RequestIDsBucket)
	require.NoError(t, err)
	_, err = admin.Append(ctx, "victim", 0, userEvent("victim", "r1", 0, "hello"))
	require.NoError(t, err)

	// The weapon: a purged key's marker (an erased conversation's
	// snapshot key holds one), which the client may read with a direct
	// get; the server's answer keeps the marker's Nats-Rollup header.
	snaps, err := js.KeyValue(ctx, names.SnapshotsBucket)
	require.NoError(t, err)
	_, err = snaps.Put(ctx, "erased", []byte("x"))
	require.NoError(t, err)
	require.NoError(t, snaps.Purge(ctx, "erased"))
	marker := "$JS.API.DIRECT.GET.KV_" + names.SnapshotsBucket + ".$KV." + names.SnapshotsBucket + ".erased"

	value := func(kv jetstream.KeyValue, key string) func(t *testing.T) {
		return func(t *testing.T) {
			e, err := kv.Get(ctx, key)
			require.NoError(t, err, "the key's value survives")
			assert.NotEmpty(t, e.Value())
		}
	}
	for _, tc := range []struct {
		name           string
		request, reply string
		stream         string
		survives       func(t *testing.T)
	}{
		{"a purge marker aimed at the threading index", marker, "$KV." + names.ThreadsBucket + ".victim",
			"KV_" + names.ThreadsBucket, value(threads, "victim")},
		{"a purge marker aimed at a request ID", marker, "$KV." + names.RequestIDsBucket + ".01VICTIMREQUESTID",
			"KV_" + names.RequestIDsBucket, value(ids, "01VICTIMREQUESTID")},
		{"a stream info aimed at a conversation's events", "$JS.API.STREAM.INFO." + names.EventsStreamOf("victim"),
			names.EventsRoleSubject("victim", "admin"), names.EventsStreamOf("victim"), nil},
		{"the status ping aimed at a conversation's events", names.WorkersPing(),
			names.EventsRoleSubject("victim", "worker"), names.EventsStreamOf("victim"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := js.Stream(ctx, tc.stream)
			require.NoError(t, err)
			before := st.CachedInfo().State
			require.NoError(t, cc.nc.PublishRequest(tc.request, tc.reply, nil))
			// The same request answered on the client's own inbox: once
			// it is, the server has handled the one before.
			if tc.request != names.WorkersPing() {
				_, err = cc.nc.Request(tc.request, nil, 10*time.Second)
				require.NoError(t, err, "the client's own request is answered")
			}
			cc.assertNoRefusal(t)
			assert.Never(t, func() bool {
				info, err := st.Info(ctx)
				return err != nil || info.State.LastSeq != before.LastSeq
			}, 500*time.Millisecond, 20*time.Millisecond, "%s stores nothing: the answer went to the client's account", tc.stream)
			info, err := st.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, before.Msgs, info.State.Msgs, "no message stored")
			if tc.survives != nil {
				tc.survives(t)
			}
		})
	}

	// The import that keeps the server from answering the clients'
	// account's JetStream requests itself is no grant: the client may not
	// ask turnlog's account for its JetStream limits and usage.
	cc.expectRefused(t, "$JS.API.INFO", func(ctx context.Context) error {
		_, err := cc.nc.RequestWithContext(ctx, "$JS.API.INFO", nil)
		return err
	})
}

// TestClientImportsFollowItsGrants: the clients' account imports exactly
// the client role's grants (a subject granted but not imported would reach
// no one), each batched direct get streamed (its answer is several
// messages), and the one import that is no grant, which the client may
// not send; the status ping alone goes the other way, a stream turnlog's
// account imports (as a service, every ping kept a response entry).
func TestClientImportsFollowItsGrants(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards int
	}{
		{"one events stream", 1},
		{"sharded events", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := eventlog.NamesFor(eventlog.DefaultPrefix).WithEventShards(tc.shards)
			spec := natsauth.SpecFor(natsauth.Client, names)
			services, streams, fromClients := map[string]bool{}, map[string]bool{}, map[string]bool{}
			for _, im := range natsauth.ImportsFor(names) {
				if im.FromClients {
					assert.False(t, im.Service, "%s: what turnlog's account imports from the clients' is a stream", im.Subject)
					fromClients[im.Subject] = true
					continue
				}
				if im.Service {
					assert.False(t, services[im.Subject], "%s imported twice", im.Subject)
					services[im.Subject] = im.Streamed
				} else {
					streams[im.Subject] = true
				}
			}
			assert.Equal(t, map[string]bool{names.WorkersPing(): true}, fromClients, "the status ping alone is a stream from the clients")
			for _, g := range spec.Publish {
				if fromClients[g.Subject] {
					continue
				}
				streamed, ok := services[g.Subject]
				require.True(t, ok, "publish grant %s is imported as a service", g.Subject)
				rest, direct := strings.CutPrefix(g.Subject, "$JS.API.DIRECT.GET.")
				assert.Equal(t, direct && !strings.Contains(rest, "."), streamed, "%s: streamed answers for batched direct gets only", g.Subject)
				delete(services, g.Subject)
			}
			assert.Equal(t, map[string]bool{"$JS.API.INFO": false}, services, "no service but the grants and the one that keeps the server's own answers away")
			for _, g := range spec.Subscribe {
				if g.Subject == natsauth.InboxPrefix(natsauth.Client)+".>" {
					assert.False(t, streams[g.Subject], "the client's inbox is its own account's")
					continue
				}
				assert.True(t, streams[g.Subject], "subscribe grant %s is imported as a stream", g.Subject)
			}
			for _, g := range spec.Publish {
				assert.NotEqual(t, "$JS.API.INFO", g.Subject, "the client may not ask for account info")
			}
		})
	}
}

// TestServiceExportsHaveAShortResponseThreshold: nats-server keeps an
// entry for every request on an imported service until it is answered or
// the export's response threshold passes, and a batched direct get's
// entry (a streamed answer) until the threshold whatever happens: with
// the default 2 minutes a client key that sends requests fast grows the
// server's memory without bound (found by the security probe). Every
// service export carries a short threshold, in the configuration and in
// the accounts the server loads from it, but not shorter than the 5 s
// nats.go and JetStream wait for an answer.
func TestServiceExportsHaveAShortResponseThreshold(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth())
	names := eventlog.NamesFor(eventlog.DefaultPrefix)
	auth, err := natsauth.ServerAuth(srv.AuthDir, names)
	require.NoError(t, err)
	running, err := srv.NATS().LookupAccount(natsauth.Account)
	require.NoError(t, err)
	var loaded *server.Account
	for _, a := range auth.Accounts {
		if a.Name == natsauth.Account {
			loaded = a
		}
	}
	require.NotNil(t, loaded, "the configuration defines %s", natsauth.Account)
	conf := natsauth.Conf(names, func(r natsauth.Role) string { return "$" + natsauth.EnvVar(r) })
	n := 0
	for _, im := range natsauth.ImportsFor(names) {
		if !im.Service {
			continue
		}
		n++
		for _, tc := range []struct {
			name string
			acc  *server.Account
		}{
			{"loaded from the configuration", loaded},
			{"in the running server", running},
		} {
			thr, err := tc.acc.ServiceExportResponseThreshold(im.Subject)
			require.NoError(t, err, "%s: %s", tc.name, im.Subject)
			assert.Less(t, thr, server.DEFAULT_SERVICE_EXPORT_RESPONSE_THRESHOLD, "%s: %s", tc.name, im.Subject)
			assert.GreaterOrEqual(t, thr, 5*time.Second, "%s: %s: an answer nats.go still waits for", tc.name, im.Subject)
		}
		line := ""
		for _, l := range strings.Split(conf, "\n") {
			if strings.Contains(l, `{ service: "`+im.Subject+`"`) {
				line = l
			}
		}
		assert.Contains(t, line, "response_threshold:", "the export of %s in the configuration", im.Subject)
	}
	assert.Positive(t, n)
}
