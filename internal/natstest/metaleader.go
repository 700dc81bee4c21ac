package natstest

import "time"

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
