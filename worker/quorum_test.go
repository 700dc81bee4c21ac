package worker_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// TestWorkerOnACutOffServerLogsTheLoss runs a worker whose only server
// is the JetStream meta leader and cuts that server's routes: the server
// keeps answering account info (only the meta leader does) until it notices
// it lost its quorum, 10 to 20 s later, while the worker's appends and
// pulls hang. The worker must say it lost the cluster before that, while
// its server still believes it leads: the moment is taken from the server
// itself when the loss is logged, so no clock is compared. It must not
// believe the cluster back while the server is cut off, and must log the
// recovery after the heal. A server that leads nothing is the plain case:
// it answers no account info once cut off.
func TestWorkerOnACutOffServerLogsTheLoss(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	if testing.Short() {
		t.Skip("three-node clusters with a fault: about a minute and a half")
	}
	tests := []struct {
		name string
		// metaLeader: the cut-off server is the meta leader (else another
		// server is, and leads the requests and events streams too).
		metaLeader bool
		// leadStreams: the cut-off server also leads the requests and
		// events streams (it answers their info itself); otherwise another
		// server leads the requests stream.
		leadStreams bool
	}{
		{name: "follower of everything"},
		{name: "meta leader only", metaLeader: true},
		{name: "meta leader and leader of the requests and events streams", metaLeader: true, leadStreams: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := natstest.StartFaultyCluster(t, 3)
			admin := c.Dial(t, "admin")
			l := openClusterLog(t, admin, eventlog.WithReplicas(3))
			rq, ev := l.Names().RequestsStream, l.Names().EventsStream

			meta := c.MetaLeader()
			require.GreaterOrEqual(t, meta, 0, "a meta leader: %s", c.Describe(rq))
			i := meta
			switch {
			case !tc.metaLeader:
				i = (meta + 1) % c.N()
				c.LeadStream(meta, rq)
				c.LeadStream(meta, ev)
			case tc.leadStreams:
				c.LeadStream(i, rq)
				c.LeadStream(i, ev)
			default:
				c.LeadStream((i+1)%c.N(), rq)
			}
			require.Equal(t, meta, c.MetaLeader(), "meta leadership moved during set-up: %s", c.Describe(rq))
			srv := c.Server(i)

			// What the server believes of itself when the worker logs.
			var healed atomic.Bool
			var mu sync.Mutex
			var losses []lossSeen
			var recoveries, recoveriesBeforeHeal int
			hook := func(r slog.Record) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case strings.HasPrefix(r.Message, "lost the NATS cluster"):
					losses = append(losses, lossSeen{
						metaLeader:   srv.JetStreamIsLeader(),
						streamLeader: srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, rq),
						err:          attr(r, "err"),
						sign:         attr(r, "sign"),
					})
				case strings.HasPrefix(r.Message, "NATS cluster reachable again"):
					recoveries++
					if !healed.Load() {
						recoveriesBeforeHeal++
					}
				}
			}
			startWorkerOnServer(t, c, i, hook)
			waitForClusterWorkers(t, l, 1)
			counts := func() (int, int) {
				mu.Lock()
				defer mu.Unlock()
				return len(losses), recoveries
			}
			require.Equal(t, 0, func() int { n, _ := counts(); return n }(), "a loss logged on a healthy cluster: %+v", losses)

			// Cut right after the worker asked for account info: its next
			// periodic probe is then as late as it can be.
			probes := watchSubject(t, srv, "$JS.API.INFO")
			select {
			case <-probes:
			case <-time.After(30 * time.Second):
				t.Fatal("the worker did not probe JetStream in 30 s")
			}
			c.IsolateRoutes(i)

			require.Eventually(t, func() bool { n, _ := counts(); return n > 0 }, 60*time.Second, 20*time.Millisecond,
				"the worker never logged the loss of the cluster")
			mu.Lock()
			first := losses[0]
			mu.Unlock()
			t.Logf("loss logged: sign %q, err %q; server still meta leader %t, still %s leader %t",
				first.sign, first.err, first.metaLeader, rq, first.streamLeader)
			if tc.metaLeader {
				assert.True(t, first.metaLeader,
					"the loss was logged only once the cut-off server had stepped down as meta leader; until then the worker looked healthy (err: %s)", first.err)
				assert.Contains(t, first.err, rq, "the loss names the stream whose quorum is missing")
			}
			if tc.leadStreams {
				assert.True(t, first.streamLeader, "the loss was logged only once the cut-off server had stepped down as %s leader", rq)
			}

			// The server notices it lost its quorum (a leader steps down,
			// a follower no longer hears from the leader); the worker must
			// not take anything it says meanwhile for the cluster.
			noticed := func() bool { return !srv.JetStreamIsCurrent() }
			if tc.metaLeader {
				noticed = func() bool { return !srv.JetStreamIsLeader() }
			}
			deadline := time.Now().Add(60 * time.Second)
			for !noticed() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if !noticed() {
				// nats-server's own view, not the worker's: under load a
				// cut-off follower has been seen to stay "current" past
				// 60 s (CI, 2026-11-27). The worker's part, logging the
				// loss, was checked above; what follows needs the server
				// to have noticed, so this run cannot check it.
				t.Skipf("the cut-off server did not notice it lost the cluster in 60 s, so the recovery cannot be checked in this run: %s", c.Describe(rq))
			}
			c.Heal()
			healed.Store(true)
			require.Eventually(t, func() bool { _, n := counts(); return n > 0 }, 90*time.Second, 50*time.Millisecond,
				"the worker never logged that the cluster is back")
			mu.Lock()
			assert.Equal(t, 0, recoveriesBeforeHeal, "the worker believed the cluster back while its server was cut off")
			assert.Len(t, losses, 1, "the loss is logged once while the server is cut off: %+v", losses)
			mu.Unlock()
			// Elections after the heal may make a further, real loss;
			// each is followed by its recovery.
			assert.Eventually(t, func() bool { lost, back := counts(); return lost == back }, 60*time.Second, 50*time.Millisecond,
				"every loss is followed by its recovery")
		})
	}
}

// lossSeen is one loss the worker logged and what its server believed of
// itself at that moment.
type lossSeen struct {
	metaLeader, streamLeader bool
	err, sign                string
}

// attr is the value of a record's attribute key, or "".
func attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// watchSubject delivers a signal for every message published on subject
// at server srv.
func watchSubject(t *testing.T, srv *server.Server, subject string) <-chan struct{} {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	seen := make(chan struct{}, 1)
	_, err = nc.Subscribe(subject, func(*nats.Msg) {
		select {
		case seen <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return seen
}

// startWorkerOnServer runs a worker connected to server i of c only, with
// the default settings (as `turnlog worker` has them), until the test
// ends; hook sees every record it logs.
func startWorkerOnServer(t *testing.T, c *natstest.Cluster, i int, hook func(slog.Record)) {
	t.Helper()
	nc, err := nats.Connect(c.ClientURL("worker", i), nats.Name("worker"),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.RetryOnFailedConnect(true))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	startWorkerWith(t, nc, hook, eventlog.WithReplicas(3))
}

// startWorkerWith runs a worker on nc with the default settings until the
// test ends; hook sees every record it logs.
func startWorkerWith(t *testing.T, nc *nats.Conn, hook func(slog.Record), opts ...eventlog.Option) {
	t.Helper()
	logger := slog.New(hookHandler{slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}), hook})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := worker.OpenLog(ctx, nc, logger, opts...)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Log: l, Conn: nc, Profiles: profiles, Name: "worker", Logger: logger, ShutdownGrace: time.Second})
	require.NoError(t, err)
	run, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(run) }()
	t.Cleanup(func() { stop(); <-done })
}

// hookHandler passes every record to hook before its handler writes it.
type hookHandler struct {
	slog.Handler
	hook func(slog.Record)
}

func (h hookHandler) Handle(ctx context.Context, r slog.Record) error {
	h.hook(r)
	return h.Handler.Handle(ctx, r)
}

func (h hookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return hookHandler{h.Handler.WithAttrs(as), h.hook}
}

func (h hookHandler) WithGroup(name string) slog.Handler {
	return hookHandler{h.Handler.WithGroup(name), h.hook}
}

// TestProbeWithTheWorkerKey: the probe's requests (account info, the
// requests stream's info) are within the worker role's permissions, so a
// worker on a healthy server with authentication never logs a loss. Two
// probes are awaited: the first one's outcome is logged before the second
// one starts.
func TestProbeWithTheWorkerKey(t *testing.T) {
	t.Parallel() // waits on servers and timers, not the processor: beside the other such tests
	srv := natstest.Start(t, natstest.WithAuth())
	_, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	lost := make(chan string, 1)
	hook := func(r slog.Record) {
		if strings.HasPrefix(r.Message, "lost the NATS cluster") {
			select {
			case lost <- attr(r, "err"):
			default:
			}
		}
	}
	startWorkerWith(t, srv.ConnectAs(t, natsauth.Worker), hook)

	probes := make(chan struct{}, 8)
	_, err = srv.Conn.Subscribe("$JS.API.INFO", func(*nats.Msg) { probes <- struct{}{} })
	require.NoError(t, err)
	require.NoError(t, srv.Conn.Flush())
	for range 2 {
		select {
		case <-probes:
		case err := <-lost:
			t.Fatalf("the worker's probe failed with the worker key: %s", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the worker did not probe JetStream in 30 s")
		}
	}
	select {
	case err := <-lost:
		t.Fatalf("the worker's probe failed with the worker key: %s", err)
	default:
	}
}
