package natstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterName is the name the servers of StartCluster share.
const ClusterName = "turnlog-test"

// clusterWait bounds how long StartCluster and Restart wait for the cluster
// to elect a JetStream meta leader: elections take seconds on a busy
// machine, and a test that gives up early reports a fault that is not there.
const clusterWait = 60 * time.Second

// Cluster is n real JetStream servers in this process, routed to each other
// on 127.0.0.1, so that tests exercise replicated (R3) streams, leader
// elections and a node dying without Docker. Each server keeps its store in
// its own tb.TempDir() and its ports for the whole test, so Restart brings
// back the same node with the same data and the routes reconnect.
// It is safe for concurrent use.
type Cluster struct {
	tb     testing.TB
	mu     sync.Mutex
	nodes  []*clusterNode
	logDir string    // "" unless LogsEnv is set
	net    *faultNet // nil unless started by StartFaultyCluster
}

// LogsEnv names the environment variable that, set to a directory, makes
// the servers of StartCluster write their logs (with debug lines) to a new
// subdirectory of it that outlives the test: what a failed election leaves
// to be read.
const LogsEnv = "TURNLOG_NATSTEST_LOGS"

type clusterNode struct {
	name        string
	dir         string
	port        int // clients
	clusterPort int // routes
	srv         *server.Server
	watch       *listenWatch // srv's fatal errors
}

// StartCluster starts n servers (n >= 1; 3 for R3 streams), waits until
// JetStream has a meta leader that knows every server, and registers their
// shutdown with tb.Cleanup.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("start cluster: %d servers; use 1 or more", n)
	}
	return startCluster(tb, n, false)
}

func startCluster(tb testing.TB, n int, faulty bool) *Cluster {
	tb.Helper()
	var logDir string
	if dir := os.Getenv(LogsEnv); dir != "" {
		d, err := os.MkdirTemp(dir, "cluster-")
		if err != nil {
			tb.Fatalf("start cluster: %s: %v", LogsEnv, err)
		}
		logDir = d
		tb.Logf("cluster logs in %s", logDir)
	}
	// A port found free can be taken before the server binds it (see
	// freeport.Ports); the server then says so and the cluster starts
	// again on other ports.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		c, err := tryStartCluster(tb, n, faulty, logDir)
		if err == nil {
			c.waitForMetaLeader(n)
			return c
		}
		if attempt == attempts {
			tb.Fatalf("start cluster: %v (attempt %d of %d)", err, attempt, attempts)
		}
		tb.Logf("start cluster: %v; starting again on other ports", err)
	}
}

// tryStartCluster starts n servers on fresh ports and waits until each
// listens. When a server cannot listen on its ports it fails, with every
// server and proxy it started stopped again.
func tryStartCluster(tb testing.TB, n int, faulty bool, logDir string) (*Cluster, error) {
	tb.Helper()
	c := &Cluster{tb: tb, logDir: logDir}
	ports := pickPorts(tb, 2*n)
	for i := range n {
		c.nodes = append(c.nodes, &clusterNode{
			name:        fmt.Sprintf("n%d", i+1),
			dir:         filepath.Join(tb.TempDir(), fmt.Sprintf("n%d", i+1)),
			port:        ports[2*i],
			clusterPort: ports[2*i+1],
		})
	}
	if faulty {
		f, err := newFaultNet(tb, c.nodes)
		if err != nil {
			return nil, err
		}
		c.net = f
	}
	tb.Cleanup(c.shutdown)
	giveUp := func(err error) (*Cluster, error) {
		c.shutdown()
		if c.net != nil {
			c.net.stop()
		}
		return nil, err
	}
	// Start every server before waiting for any: a lone server of a
	// cluster waits for its peers before JetStream is usable.
	for i := range c.nodes {
		if err := c.start(i); err != nil {
			return giveUp(err)
		}
	}
	for i := range c.nodes {
		if err := c.waitListening(i); err != nil {
			return giveUp(err)
		}
	}
	return c, nil
}

// waitListening waits until server i accepts clients and routes, or it
// reports that it cannot listen.
func (c *Cluster) waitListening(i int) error {
	c.mu.Lock()
	nd := c.nodes[i]
	ns, watch := nd.srv, nd.watch
	c.mu.Unlock()
	deadline := time.Now().Add(clusterWait)
	for !ns.ReadyForConnections(100 * time.Millisecond) {
		if msg := watch.failure(); msg != "" {
			return fmt.Errorf("server %s (client port %d, route port %d): %s", nd.name, nd.port, nd.clusterPort, msg)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %s not ready after %s", nd.name, clusterWait)
		}
	}
	return nil
}

// options builds server i's configuration: its own name, store and ports,
// and routes to every other server of the cluster.
func (c *Cluster) options(i int) *server.Options {
	nd := c.nodes[i]
	var routes []string
	for j, other := range c.nodes {
		if j != i {
			routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(other.clusterPort))
		}
	}
	routeURLs := strings.Join(routes, ",")
	if c.net != nil {
		routeURLs = c.net.routeURLs(i)
	}
	opts := &server.Options{
		ServerName: nd.name,
		Host:       "127.0.0.1",
		Port:       nd.port,
		JetStream:  true,
		StoreDir:   nd.dir,
		NoSigs:     true,
		NoLog:      true,
		// As the embedded server: long tool results and snapshots fit.
		MaxPayload: 8 << 20,
		Cluster: server.ClusterOpts{
			Name: ClusterName,
			Host: "127.0.0.1",
			Port: nd.clusterPort,
		},
		Routes: server.RoutesFromStr(routeURLs),
	}
	if c.net != nil {
		// Neither clients nor peers learn the real ports: everything
		// goes through the proxies.
		opts.Cluster.NoAdvertise = true
		opts.Cluster.Advertise = c.net.dead
	}
	opts.MaxPending = int64(opts.MaxPayload) * 8
	if c.logDir != "" {
		opts.NoLog, opts.Debug, opts.Logtime = false, true, true
		opts.LogFile = filepath.Join(c.logDir, nd.name+".log")
	}
	return opts
}

// start runs server i without waiting for it.
func (c *Cluster) start(i int) error {
	ns, err := server.NewServer(c.options(i))
	if err != nil {
		return fmt.Errorf("server %s: %w", c.nodes[i].name, err)
	}
	watch := &listenWatch{}
	if c.logDir != "" {
		ns.ConfigureLogger()
		watch.next = ns.Logger()
	}
	ns.SetLoggerV2(watch, c.logDir != "", false, false)
	go ns.Start()
	c.nodes[i].srv, c.nodes[i].watch = ns, watch
	return nil
}

// waitForMetaLeader waits until a running server is the JetStream meta
// leader, it counts want peers, and every running server follows it: only
// then can an R3 stream be placed and a stopped node be told apart from a
// cluster that is still forming.
func (c *Cluster) waitForMetaLeader(want int) {
	c.tb.Helper()
	deadline := time.Now().Add(clusterWait)
	for time.Now().Before(deadline) {
		if c.settled(want) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	c.tb.Fatalf("cluster: no JetStream meta leader with %d peers after %s", want, clusterWait)
}

func (c *Cluster) settled(want int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	leader := false
	for _, nd := range c.nodes {
		if nd.srv == nil {
			continue
		}
		if !nd.srv.JetStreamIsCurrent() {
			return false
		}
		if nd.srv.JetStreamIsLeader() {
			leader = len(nd.srv.JetStreamClusterPeers()) >= want
		}
	}
	return leader
}

// N is the number of servers, running or stopped.
func (c *Cluster) N() int { return len(c.nodes) }

// URL is server i's client URL (valid even while it is stopped: Restart
// brings it back on the same port).
func (c *Cluster) URL(i int) string {
	return "nats://127.0.0.1:" + strconv.Itoa(c.nodes[i].port)
}

// URLs lists every server's client URL, comma-separated, as nats.Connect
// and `turnlog --nats-url` take them: a client connected through it fails
// over to another server when its own dies.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.nodes))
	for i := range c.nodes {
		urls[i] = c.URL(i)
	}
	return strings.Join(urls, ",")
}

// Server is server i, or nil while it is stopped; for tests that inspect
// leadership or step a leader down.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].srv
}

// Stop shuts server i down and waits until its store is closed: a node
// that is stopped, or whose machine dies, from its peers' point of view.
// It is a clean shutdown, so the server first hands over what it leads; a
// node killed outright leaves its peers to notice and hold an election,
// which takes a few seconds more. Stopping a stopped server does nothing.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	ns := c.nodes[i].srv
	c.nodes[i].srv = nil
	c.mu.Unlock()
	if ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
}

// Restart brings stopped server i back with its store and ports, so its
// peers' routes reconnect and it catches up on what it missed, and waits
// until it follows the meta leader again. Restarting a running server
// stops it first.
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	c.Stop(i)
	c.mu.Lock()
	err := c.start(i)
	c.mu.Unlock()
	if err == nil {
		err = c.waitListening(i)
	}
	if err != nil {
		c.tb.Fatalf("restart: %v", err)
	}
	c.waitForMetaLeader(len(c.nodes))
}

// shutdown stops every server that still runs.
func (c *Cluster) shutdown() {
	for i := range c.nodes {
		c.Stop(i)
	}
}
