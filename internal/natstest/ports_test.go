package natstest

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreePortsAvoidTheEphemeralRange checks that the ports a cluster is
// given are not ones the kernel hands out as source ports of outgoing
// connections, which is how a port found free was taken before the
// server bound it in CI.
func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range here")
	}
	f := strings.Fields(string(b))
	require.Len(t, f, 2)
	lo, _ := strconv.Atoi(f[0])
	hi, _ := strconv.Atoi(f[1])
	if qlo, qhi := quietPortRange(); qlo == qhi {
		t.Skipf("the ephemeral range %d-%d leaves no room", lo, hi)
	}
	ports := freePorts(t, 50)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, p >= lo && p <= hi, "port %d is in the ephemeral range %d-%d", p, lo, hi)
		assert.False(t, seen[p], "port %d given twice", p)
		seen[p] = true
	}
}

// TestClusterStartsAgainWhenAPortIsTaken takes the client port of the
// first ports the cluster is given, as an outgoing connection of another
// test can: the server reports that it cannot listen, and the cluster
// starts on other ports instead of waiting a minute and failing.
func TestClusterStartsAgainWhenAPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port

	calls := 0
	pickPorts = func(tb testing.TB, count int) []int {
		calls++
		ports := freePorts(tb, count)
		if calls == 1 {
			ports[0] = takenPort // node n1's client port
		}
		return ports
	}
	defer func() { pickPorts = freePorts }()

	c := StartCluster(t, 3)
	assert.Equal(t, 2, calls, "the cluster was started again on fresh ports")
	assert.NotEqual(t, "nats://127.0.0.1:"+strconv.Itoa(takenPort), c.URL(0))
	assert.NotNil(t, c.Server(0))
}

// TestWaitListeningSaysWhichPortFailed checks the error a cluster gives
// up with names the server and the port it could not listen on.
func TestWaitListeningSaysWhichPortFailed(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	ports := freePorts(t, 1)
	c := &Cluster{tb: t, nodes: []*clusterNode{{
		name:        "n1",
		dir:         t.TempDir(),
		port:        taken.Addr().(*net.TCPAddr).Port,
		clusterPort: ports[0],
	}}}
	t.Cleanup(c.shutdown)
	require.NoError(t, c.start(0))
	err = c.waitListening(0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server n1")
	assert.Contains(t, err.Error(), "Error listening on port")
	assert.Contains(t, err.Error(), strconv.Itoa(c.nodes[0].port))
}
