package natstest

// This file holds what a test asks of a cluster's leaders: who leads the
// meta group and a stream, and how to make a given server lead a stream.

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// MetaLeader is the index of the server that is JetStream meta leader now,
// or -1 during an election.
func (c *Cluster) MetaLeader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, nd := range c.nodes {
		if nd.srv != nil && nd.srv.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// StreamLeader is the index of the server leading stream (in the default
// account) now, or -1 when none does: stopping it is the fault that forces
// an election on the write path.
func (c *Cluster) StreamLeader(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, nd := range c.nodes {
		if nd.srv != nil && nd.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// LeadStream makes server i the leader of stream (in the default account):
// what a client connected to i reads is then answered from i's own store,
// which proves that a restarted server caught up. Once i is current (has
// caught up), it asks the leader to hand over to i, until i leads.
//
// Handing over to a server that is still catching up would only cost an
// election it cannot win, and asking again at every new leader would keep
// the stream leaderless, so both are avoided.
func (c *Cluster) LeadStream(i int, stream string) {
	c.tb.Helper()
	deadline := time.Now().Add(clusterWait)
	var last string
	for time.Now().Before(deadline) {
		leader := c.StreamLeader(stream)
		if leader == i {
			return
		}
		ns := c.Server(i)
		if ns == nil {
			c.tb.Fatalf("lead stream %s: server %s is stopped", stream, c.nodes[i].name)
		}
		if leader < 0 || !ns.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err := c.stepDown(ns, stream, c.nodes[i].name); err != nil {
			last = err.Error()
			time.Sleep(250 * time.Millisecond)
			continue
		}
		// Let the hand-over (or the election after it) finish before
		// looking again.
		for wait := time.Now().Add(10 * time.Second); time.Now().Before(wait); {
			if l := c.StreamLeader(stream); l >= 0 && l != leader {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c.tb.Fatalf("lead stream %s: server %s not leader after %s (last error: %s; %s)", stream, c.nodes[i].name, clusterWait, last, c.Describe(stream))
}

// Describe says, server by server, who leads and who is current for the
// meta group and stream: what a failure message needs to tell a stuck
// election from a bug.
func (c *Cluster) Describe(stream string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, nd := range c.nodes {
		if nd.srv == nil {
			parts = append(parts, nd.name+": stopped")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: meta leader %t, meta current %t, %s leader %t, %s current %t",
			nd.name, nd.srv.JetStreamIsLeader(), nd.srv.JetStreamIsCurrent(),
			stream, nd.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream),
			stream, nd.srv.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream)))
	}
	return strings.Join(parts, "; ")
}

// stepDown asks, through ns, the leader of stream to hand over to the
// server named preferred.
func (c *Cluster) stepDown(ns *server.Server, stream, preferred string) error {
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		return err
	}
	defer nc.Close()
	req, _ := json.Marshal(server.JSApiLeaderStepdownRequest{Placement: &server.Placement{Preferred: preferred}})
	msg, err := nc.Request(fmt.Sprintf(server.JSApiStreamLeaderStepDownT, stream), req, 5*time.Second)
	if err != nil {
		return err
	}
	var resp server.JSApiStreamLeaderStepDownResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return err
	}
	if resp.Error != nil {
		return resp.Error
	}
	return nil
}

// leadMetaAttempts bounds LeadMeta: each attempt hands the meta group to
// server i with a chance of one in two (the two servers left elect one of
// themselves), so twenty attempts fail once in a million runs.
const leadMetaAttempts = 20

// LeadMeta makes server i the JetStream meta leader, so that a test of a
// server cut off while it leads the cluster tests that, not whichever
// server won the first election. Only the system account may ask the meta
// leader to hand over, which these servers give no client, so the leader
// is stopped (the others elect one of themselves) and restarted, until i
// leads. Call it before creating streams: each restart is an election of
// every group the stopped server leads.
func (c *Cluster) LeadMeta(i int) {
	c.tb.Helper()
	var tried []string
	for range leadMetaAttempts {
		leader := c.waitForAMetaLeader()
		if leader == i {
			if len(tried) > 0 {
				c.tb.Logf("lead meta: %s leads after restarting %v", c.nodes[i].name, tried)
			}
			return
		}
		tried = append(tried, c.nodes[leader].name)
		c.Stop(leader)
		c.waitForAMetaLeader()
		c.Restart(leader)
	}
	c.tb.Fatalf("lead meta: server %s not meta leader after restarting the leader %d times (%v)", c.nodes[i].name, leadMetaAttempts, tried)
}

// waitForAMetaLeader waits until a running server is meta leader and
// returns it.
func (c *Cluster) waitForAMetaLeader() int {
	c.tb.Helper()
	deadline := time.Now().Add(clusterWait)
	for time.Now().Before(deadline) {
		if l := c.MetaLeader(); l >= 0 {
			return l
		}
		time.Sleep(25 * time.Millisecond)
	}
	c.tb.Fatalf("lead meta: no meta leader after %s", clusterWait)
	return -1
}
