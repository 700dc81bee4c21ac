package natstest

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/freeport"
)

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
		ports := freeport.Ports(tb, count)
		if calls == 1 {
			ports[0] = takenPort // node n1's client port
		}
		return ports
	}
	defer func() { pickPorts = freeport.Ports }()

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
	ports := freeport.Ports(t, 1)
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
