package chatclient_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/chatclient"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// TestAskFailsOverToAnotherServer: a client given the URLs of three
// servers uses the first; that server is then cut off from the others
// while the client's connection to it stays open (nothing tells the
// client's NATS library to reconnect), so JetStream stops answering
// through it. The next request is answered all the same: the client moved
// to another of its URLs.
func TestAskFailsOverToAnotherServer(t *testing.T) {
	c := natstest.StartFaultyCluster(t, 3)
	startClusterWorker(t, c, 1, 2)

	nc, err := nats.Connect(c.ClientURLs("chat"), nats.Name("chat"), nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	l, err := eventlog.Attach(nc)
	require.NoError(t, err)
	cl := chatclient.New(nc, l)
	first := c.ClientURL("chat", 0)

	res, err := ask(t, cl, worker.Request{Conversation: "failover", Text: "before"}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, "You said: before", res.Answer)
	require.Equal(t, first, nc.ConnectedUrl(), "the client starts on the first server it was given")

	c.IsolateRoutes(0)
	res, err = ask(t, cl, worker.Request{Conversation: "failover", Text: "after"}, 90*time.Second)
	require.NoError(t, err, "the request waited on the server cut off")
	assert.Equal(t, "You said: after", res.Answer)
	assert.NotEqual(t, first, nc.ConnectedUrl(), "the client is served by another server")
	t.Logf("served through %s after the first server (%s) was cut off", nc.ConnectedUrl(), first)
}

// startClusterWorker runs a worker on the servers of c given, in that
// order, through proxies of its own, with streams of 3 replicas, until
// the test ends.
func startClusterWorker(t *testing.T, c *natstest.Cluster, servers ...int) {
	t.Helper()
	var urls []string
	for _, i := range servers {
		urls = append(urls, c.ClientURL("worker", i))
	}
	wnc, err := nats.Connect(strings.Join(urls, ","), nats.Name("worker"), nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.RetryOnFailedConnect(true))
	require.NoError(t, err)
	t.Cleanup(wnc.Close)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := worker.OpenLog(ctx, wnc, logger, eventlog.WithReplicas(3))
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Log: l, Conn: wnc, Profiles: profiles, Name: "worker", Logger: logger, ShutdownGrace: time.Second})
	require.NoError(t, err)
	run, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(run) }()
	t.Cleanup(func() { stop(); <-done })
}
