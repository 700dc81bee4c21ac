package natstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// pickPorts is freePorts; a test of the retry replaces it.
var pickPorts = freePorts

// freePorts finds count distinct free TCP ports on 127.0.0.1. The routes of
// every server must name its peers' ports before any of them starts, so
// port 0 (let the server pick) cannot be used, and a port is free only
// until someone else binds it.
//
// The ports come from outside the kernel's ephemeral range when there is
// room: a port from inside it, released here and bound by the server a
// moment later, can meanwhile become the source port of any outgoing
// connection on the machine (the tests of other packages run alongside),
// and the server then fails to listen. CI saw exactly that: "server n3 not
// ready after 1m0s". Outside the range only another picker like this one
// can collide, and startCluster retries on fresh ports when one does.
func freePorts(tb testing.TB, count int) []int {
	tb.Helper()
	lo, hi := quietPortRange()
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
			tb.Fatalf("start cluster: find a free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// quietPortRange is the largest range of ports below 65536 and above the
// privileged ones that the kernel does not hand out as source ports; lo ==
// hi when there is none worth using (then freePorts lets the kernel pick).
func quietPortRange() (lo, hi int) {
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

// listenWatch is a server.Logger that remembers the server's fatal errors
// (in an embedded server, a port it could not listen on is reported only
// there, and the server never becomes ready) and passes every line on to
// next, when there is one.
type listenWatch struct {
	next  server.Logger
	mu    sync.Mutex
	fatal string
}

// failure is the first fatal error the server reported, or "".
func (w *listenWatch) failure() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fatal
}

func (w *listenWatch) Fatalf(format string, v ...any) {
	w.mu.Lock()
	if w.fatal == "" {
		w.fatal = fmt.Sprintf(format, v...)
	}
	w.mu.Unlock()
	if w.next != nil {
		w.next.Errorf(format, v...) // the file logger's Fatalf would exit the test binary
	}
}

func (w *listenWatch) Noticef(format string, v ...any) {
	if w.next != nil {
		w.next.Noticef(format, v...)
	}
}

func (w *listenWatch) Warnf(format string, v ...any) {
	if w.next != nil {
		w.next.Warnf(format, v...)
	}
}

func (w *listenWatch) Errorf(format string, v ...any) {
	if w.next != nil {
		w.next.Errorf(format, v...)
	}
}

func (w *listenWatch) Debugf(format string, v ...any) {
	if w.next != nil {
		w.next.Debugf(format, v...)
	}
}

func (w *listenWatch) Tracef(format string, v ...any) {
	if w.next != nil {
		w.next.Tracef(format, v...)
	}
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on right now,
// from outside the kernel's ephemeral range (see freePorts), for a test
// that must name a server's port before the server starts.
func FreePort(tb testing.TB) int {
	tb.Helper()
	return freePorts(tb, 1)[0]
}
