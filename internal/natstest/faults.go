package natstest

// This file holds the faulty network of a cluster: every route between two
// servers and every client connection goes through a Toxiproxy proxy
// (github.com/Shopify/toxiproxy/v2, used as a library, in this process),
// so that a test can cut a server off, silence it, or drop what it sends
// to one client, and heal the network again.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// faultNet is the proxies of a cluster started by StartFaultyCluster.
type faultNet struct {
	tb  testing.TB
	api *toxiproxy.ApiServer
	// routes[i][j] carries the routes that server i opens to server j.
	routes [][]*toxiproxy.Proxy
	// dead is an address where nothing listens, advertised by every
	// server as its route address: a server that learns of a peer by
	// gossip would otherwise connect to the peer's real port, around the
	// proxies.
	dead string

	mu      sync.Mutex
	clients map[string][]*toxiproxy.Proxy // client name -> one proxy per server
	toxics  map[*toxiproxy.Proxy][]string // toxics in place, to heal
	stopped map[*toxiproxy.Proxy]bool     // proxies cut, to heal
}

// StartFaultyCluster is StartCluster with a network that can fail: the
// routes between servers i and j go through a proxy for each direction in
// which a route is opened, and clients connect through proxies of their
// own (ClientURLs). The servers do not tell clients or each other about
// their real ports, so nothing goes around the proxies.
func StartFaultyCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	if n < 2 {
		tb.Fatalf("start faulty cluster: %d servers; use 2 or more", n)
	}
	return startCluster(tb, n, true)
}

// newFaultNet makes the route proxies of nodes, whose ports are known.
func newFaultNet(tb testing.TB, nodes []*clusterNode) (*faultNet, error) {
	logger := zerolog.Nop()
	f := &faultNet{
		tb:      tb,
		api:     toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger),
		clients: map[string][]*toxiproxy.Proxy{},
		toxics:  map[*toxiproxy.Proxy][]string{},
		stopped: map[*toxiproxy.Proxy]bool{},
	}
	n := len(nodes)
	ports := pickPorts(tb, n*n+1)
	f.dead = "127.0.0.1:" + strconv.Itoa(ports[n*n])
	f.routes = make([][]*toxiproxy.Proxy, n)
	for i := range nodes {
		f.routes[i] = make([]*toxiproxy.Proxy, n)
		for j, to := range nodes {
			if i == j {
				continue
			}
			p, err := f.proxy(fmt.Sprintf("route-%s-%s", nodes[i].name, to.name), ports[i*n+j], to.clusterPort)
			if err != nil {
				return nil, err
			}
			f.routes[i][j] = p
		}
	}
	return f, nil
}

// proxy starts a proxy from listen to upstream, both on 127.0.0.1.
func (f *faultNet) proxy(name string, listen, upstream int) (*toxiproxy.Proxy, error) {
	p := toxiproxy.NewProxy(f.api, name, "127.0.0.1:"+strconv.Itoa(listen), "127.0.0.1:"+strconv.Itoa(upstream))
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	f.tb.Cleanup(p.Stop)
	return p, nil
}

// routeURLs are the addresses server i opens its routes to.
func (f *faultNet) routeURLs(i int) string {
	var urls []string
	for j, p := range f.routes[i] {
		if j != i {
			urls = append(urls, "nats://"+p.Listen)
		}
	}
	return strings.Join(urls, ",")
}

func (c *Cluster) faults() *faultNet {
	c.tb.Helper()
	if c.net == nil {
		c.tb.Fatalf("the cluster has no faulty network: start it with StartFaultyCluster")
	}
	return c.net
}

// ClientURLs returns, for the client called name, one URL per server,
// comma-separated, each through a proxy of that client's own: cutting the
// client's proxies (DropToClient) affects it and nothing else. The same
// name gives the same proxies.
func (c *Cluster) ClientURLs(name string) string {
	c.tb.Helper()
	f := c.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	ps, ok := f.clients[name]
	if !ok {
		ports := pickPorts(c.tb, len(c.nodes))
		for i, nd := range c.nodes {
			p, err := f.proxy(fmt.Sprintf("client-%s-%s", name, nd.name), ports[i], nd.port)
			if err != nil {
				c.tb.Fatalf("client %s: %v", name, err)
			}
			ps = append(ps, p)
		}
		f.clients[name] = ps
	}
	urls := make([]string, len(ps))
	for i, p := range ps {
		urls[i] = "nats://" + p.Listen
	}
	return strings.Join(urls, ",")
}

// ClientURL is the URL of server i for the client called name (see
// ClientURLs): a client given only this one stays on server i.
func (c *Cluster) ClientURL(name string, i int) string {
	return strings.Split(c.ClientURLs(name), ",")[i]
}

// linksOf are the proxies of every route from or to server i and, when
// clients is set, of every client's connection to server i.
func (f *faultNet) linksOf(i int, clients bool) []*toxiproxy.Proxy {
	var ps []*toxiproxy.Proxy
	for j := range f.routes {
		if j != i {
			ps = append(ps, f.routes[i][j], f.routes[j][i])
		}
	}
	if clients {
		for _, cps := range f.clients {
			ps = append(ps, cps[i])
		}
	}
	return ps
}

// Isolate cuts server i off: every route to or from it, and every client
// connection to it, is closed, and new ones are refused, until Heal. The
// server itself runs on, alone: a machine whose network went away.
func (c *Cluster) Isolate(i int) {
	f := c.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut(f.linksOf(i, true))
}

// IsolateRoutes cuts server i off from the other servers only: its clients
// stay connected to it, a minority that cannot reach the cluster.
func (c *Cluster) IsolateRoutes(i int) {
	f := c.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut(f.linksOf(i, false))
}

// Silence makes the network of server i drop everything without a sign
// until Heal: routes and client connections stay open, but every byte
// either way is dropped (Toxiproxy's timeout toxic with no timeout), so
// nobody learns of the fault but by timeouts. At Heal the connections are
// closed (their streams lost bytes) and made again.
func (c *Cluster) Silence(i int) {
	f := c.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.linksOf(i, true) {
		for _, stream := range []string{"upstream", "downstream"} {
			f.addToxic(p, "silence-"+stream, "timeout", stream, `{"timeout": 0}`)
		}
	}
}

// Delay holds back by d, until Heal, every byte on the routes from and to
// server i, while its clients' connections stay prompt: a replica that
// receives the leader's appends late, and answers the reads it gets from
// what it holds, while the other two acknowledge writes without it. Keep d
// well under the raft heartbeat timeouts (a few seconds), or the delay
// becomes a loss of the server.
func (c *Cluster) Delay(i int, d time.Duration) {
	f := c.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.linksOf(i, false) {
		for _, stream := range []string{"upstream", "downstream"} {
			f.addToxic(p, "delay-"+stream, "latency", stream, fmt.Sprintf(`{"latency": %d}`, d.Milliseconds()))
		}
	}
}

// DropToClient drops, until Heal, every byte the servers send to the
// client called name (see ClientURLs), while what the client sends still
// arrives: its publishes are stored, their acknowledgements and its
// deliveries are lost. At Heal its connections are closed (the stream
// lost bytes) and it reconnects.
func (c *Cluster) DropToClient(name string) {
	f := c.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	ps, ok := f.clients[name]
	if !ok {
		c.tb.Fatalf("drop to client %s: no such client; get its URLs with ClientURLs first", name)
	}
	for _, p := range ps {
		f.addToxic(p, "drop-downstream", "timeout", "downstream", `{"timeout": 0}`)
	}
}

// Kill stops server i the way SIGKILL and a dead machine do, as its peers
// and clients see it: its connections close all at once, before it can
// hand over what it leads. (Its store is closed cleanly, which SIGKILL
// does not do.) Bring it back with Revive.
func (c *Cluster) Kill(i int) {
	f := c.faults()
	f.mu.Lock()
	f.cut(f.linksOf(i, true))
	f.mu.Unlock()
	c.Stop(i)
}

// Revive restarts a server stopped by Kill with its store and ports, lets
// its network through again and waits until it follows the meta leader.
func (c *Cluster) Revive(i int) {
	c.tb.Helper()
	f := c.faults()
	f.mu.Lock()
	f.restore(f.linksOf(i, true))
	f.mu.Unlock()
	c.Restart(i)
}

// Heal undoes every fault in place: cut proxies accept connections again
// and every toxic is removed.
func (c *Cluster) Heal() {
	f := c.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []*toxiproxy.Proxy
	for p := range f.stopped {
		all = append(all, p)
	}
	f.restore(all)
	for p, names := range f.toxics {
		for _, name := range names {
			if err := p.Toxics.RemoveToxic(context.Background(), name); err != nil {
				f.tb.Errorf("heal %s: remove %s: %v", p.Name, name, err)
			}
		}
		delete(f.toxics, p)
	}
}

// cut stops proxies, closing their connections. f.mu is held.
func (f *faultNet) cut(ps []*toxiproxy.Proxy) {
	for _, p := range ps {
		if !f.stopped[p] {
			p.Stop()
			f.stopped[p] = true
		}
	}
}

// restore starts cut proxies again on their ports. f.mu is held.
func (f *faultNet) restore(ps []*toxiproxy.Proxy) {
	for _, p := range ps {
		if !f.stopped[p] {
			continue
		}
		if err := p.Start(); err != nil {
			f.tb.Errorf("restore proxy %s: %v", p.Name, err)
			continue
		}
		delete(f.stopped, p)
	}
}

// addToxic adds a toxic to p. f.mu is held.
func (f *faultNet) addToxic(p *toxiproxy.Proxy, name, kind, stream, attributes string) {
	body := fmt.Sprintf(`{"name": %q, "type": %q, "stream": %q, "toxicity": 1, "attributes": %s}`, name, kind, stream, attributes)
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		f.tb.Fatalf("toxic %s on %s: %v", name, p.Name, err)
	}
	f.toxics[p] = append(f.toxics[p], name)
}

// stop stops every proxy, for a cluster that is given up before its test
// uses it.
func (f *faultNet) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.routes {
		for _, p := range f.routes[i] {
			if p != nil {
				p.Stop()
			}
		}
	}
	for _, ps := range f.clients {
		for _, p := range ps {
			p.Stop()
		}
	}
}
