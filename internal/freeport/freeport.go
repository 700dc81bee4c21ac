// Package freeport finds TCP ports on 127.0.0.1 that nothing listens on,
// for tests that must name a server's port before the server starts (a
// cluster's routes, a child process, a command's --listen).
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Ports finds count distinct free TCP ports on 127.0.0.1, for servers
// whose ports must be named before they start (the routes of a cluster's
// servers name their peers' ports, so port 0, let the server pick, cannot
// be used). A port is free only until someone else binds it.
//
// The ports come from outside the kernel's ephemeral range when there is
// room: a port from inside it, released here and bound by the server a
// moment later, can meanwhile become the source port of any outgoing
// connection on the machine (the tests of other packages run alongside),
// and the server then fails to listen. CI saw exactly that: "server n3 not
// ready after 1m0s". Outside the range only another picker like this one
// can collide, and natstest's clusters start again on fresh ports when
// one does.
func Ports(tb testing.TB, count int) []int {
	tb.Helper()
	lo, hi := quietRange()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, count)
	for tries := 0; len(ports) < count; tries++ {
		addr := "127.0.0.1:0"
		if hi > lo && tries < 100*count {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: draw another
			}
			tb.Fatalf("find a free port: %v", err)
		}
		ls = append(ls, l)
		port := l.Addr().(*net.TCPAddr).Port
		if !reserve(tb, port) {
			continue // another test holds it, stopped for now
		}
		ports = append(ports, port)
	}
	return ports
}

// reserve keeps port from every other picker, in this process or another
// (the tests of other packages run alongside), until tb ends: a lock on a
// file named after it, in a directory all of them share. A server a test
// stops and starts again on its port (a proxy cut to fake a partition, a
// node restarted) finds it still free, which the listen check alone
// cannot promise while nothing listens there. It reports false when
// someone else holds the port; a lock that cannot be taken for another
// reason (no temp directory) reserves nothing and does not refuse it.
// The lock files (empty, one per port ever drawn) stay: removing one
// while another process opens it would let two hold "the" lock.
func reserve(tb testing.TB, port int) bool {
	dir := filepath.Join(os.TempDir(), "turnlog-freeport")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return !errors.Is(err, syscall.EWOULDBLOCK)
	}
	tb.Cleanup(func() { f.Close() })
	return true
}

// quietRange is the largest range of ports below 65536 and above the
// privileged ones that the kernel does not hand out as source ports; lo ==
// hi when there is none worth using (then Ports lets the kernel pick).
func quietRange() (lo, hi int) {
	ephLo, ephHi := 32768, 60999 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			a, errA := strconv.Atoi(f[0])
			z, errZ := strconv.Atoi(f[1])
			if errA == nil && errZ == nil && a <= z {
				ephLo, ephHi = a, z
			}
		}
	}
	const floor, ceil = 10000, 65536
	below := [2]int{floor, min(ephLo, ceil)}
	above := [2]int{max(ephHi+1, floor), ceil}
	best := below
	if above[1]-above[0] > best[1]-best[0] {
		best = above
	}
	if best[1]-best[0] < 1000 {
		return 0, 0
	}
	return best[0], best[1]
}

// Port is one of Ports: a TCP port on 127.0.0.1 that nothing listens on
// right now, for a test that must name a server's port before the server
// starts.
func Port(tb testing.TB) int {
	tb.Helper()
	return Ports(tb, 1)[0]
}
