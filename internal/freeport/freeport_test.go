package freeport

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPortsAvoidTheEphemeralRange checks that the ports given are not ones the kernel hands out as source ports of outgoing
// connections, which is how a port found free was taken before the
// server bound it in CI.
func TestPortsAvoidTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range here")
	}
	f := strings.Fields(string(b))
	require.Len(t, f, 2)
	lo, _ := strconv.Atoi(f[0])
	hi, _ := strconv.Atoi(f[1])
	if qlo, qhi := quietRange(); qlo == qhi {
		t.Skipf("the ephemeral range %d-%d leaves no room", lo, hi)
	}
	ports := Ports(t, 50)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, p >= lo && p <= hi, "port %d is in the ephemeral range %d-%d", p, lo, hi)
		assert.False(t, seen[p], "port %d given twice", p)
		seen[p] = true
	}
}

// TestPortsStayReservedWhileTheTestRuns: a port handed out is kept from
// every other picker, in any process, until its test ends, even while
// nothing listens on it. CI failed so: a fault test stopped a proxy to
// cut a link, a test of another package drew the port it left free, and
// the proxy could not listen on it again ("restore proxy ...: bind:
// address already in use").
func TestPortsStayReservedWhileTheTestRuns(t *testing.T) {
	var port int
	t.Run("holder", func(t *testing.T) {
		port = Port(t)
		assert.False(t, reserve(t, port), "another picker (here, another open of its lock) cannot take port %d while its test runs", port)
	})
	assert.True(t, reserve(t, port), "port %d is free for others once its test ended", port)
}
