package deploy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeServer starts node n of the cluster in-process from its real
// configuration in dir, moved to loopback ports chosen by the system, with
// routes to solicit (the
// configuration's own dial n1, n2, n3 by their compose host names), and
// without JetStream.
func nodeServer(t *testing.T, dir, n string, routes []*url.URL) (*server.Server, *server.Options) {
	t.Helper()
	o, err := server.ProcessConfigFile(filepath.Join(dir, "nats-"+n+".conf"))
	require.NoError(t, err)
	o.Host, o.Port, o.HTTPPort = "127.0.0.1", -1, 0
	o.Cluster.Host, o.Cluster.Port = "127.0.0.1", -1
	// Without JetStream: a JetStream cluster node does not start without
	// routes of its own, and who may join on the cluster port does not
	// depend on it.
	o.JetStream = false
	o.Routes = routes
	o.NoLog, o.NoSigs = true, true
	s, err := server.NewServer(o)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(s.Shutdown)
	require.True(t, s.ReadyForConnections(10*time.Second), "%s did not start", n)
	return s, o
}

// routeConnect connects to a cluster port as a server joining the cluster
// would, gives user and pass (none when user is empty), and returns the
// server's first answer after its INFO: -ERR when it refuses, PONG when it
// lets the route in.
func routeConnect(t *testing.T, addr, user, pass string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "INFO "), "the cluster port answers %q", line)
	var info struct {
		AuthRequired bool `json:"auth_required"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "INFO ")), &info))
	assert.True(t, info.AuthRequired, "the cluster port must say it requires authentication")

	connect, err := json.Marshal(map[string]any{
		"user": user, "pass": pass, "name": "intruder", "cluster": "turnlog",
		"verbose": false, "pedantic": false, "tls_required": false,
	})
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "CONNECT %s\r\nPING\r\n", connect)
	require.NoError(t, err)
	for {
		line, err = r.ReadString('\n')
		require.NoError(t, err, "the server closed the connection without an answer")
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "-ERR") || line == "PONG" {
			return line
		}
	}
}

// TestRoutesRequireTheCredential starts node n1 from its configuration and
// shows that the route credential is in effect: node n2, from its own
// configuration, joins with the credential of its route URL to n1, while a
// server that gives no password or a wrong one is refused, so it receives
// no message.
func TestRoutesRequireTheCredential(t *testing.T) {
	roleKeys(t)
	dir := configDir(t, true)
	n1, o1 := nodeServer(t, dir, "n1", nil)
	addr := fmt.Sprintf("127.0.0.1:%d", o1.Cluster.Port)

	// n2 dials n1 with its configuration's route to n1 (user and password
	// in the URL), moved to where n1 listens here.
	o2, err := server.ProcessConfigFile(filepath.Join(dir, "nats-n2.conf"))
	require.NoError(t, err)
	var toN1 *url.URL
	for _, u := range o2.Routes {
		if u.Hostname() == "n1" {
			toN1 = &url.URL{Scheme: u.Scheme, User: u.User, Host: addr}
		}
	}
	require.NotNil(t, toN1, "nats-n2.conf has no route to n1")
	n2, _ := nodeServer(t, dir, "n2", []*url.URL{toN1})
	require.Eventually(t, func() bool { return n1.NumRoutes() > 0 && n2.NumRoutes() > 0 },
		20*time.Second, 50*time.Millisecond, "n2 must join n1 with the route credential")

	for _, tc := range []struct {
		name, user, pass, want string
	}{
		{name: "no credential", want: "-ERR 'Authorization Violation'"},
		{name: "wrong password", user: o1.Cluster.Username, pass: "not-the-password", want: "-ERR 'Authorization Violation'"},
		{name: "wrong user", user: "admin", pass: o1.Cluster.Password, want: "-ERR 'Authorization Violation'"},
		{name: "the credential", user: o1.Cluster.Username, pass: o1.Cluster.Password, want: "PONG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, routeConnect(t, addr, tc.user, tc.pass))
		})
	}
}
