package natsauth

// This file holds the route credential of a cluster of NATS servers: the
// user and password each node requires of a route (another server that
// joins the cluster) and gives when it dials one. Without it, anyone who
// reaches a node's cluster port could join as a server and receive every
// message, or inject some.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats-server/v2/conf"
)

// ClusterFileName is the file of a key directory that holds the route
// credential as a nats-server configuration fragment, for include in each
// node's cluster block (deploy/nats-n*.conf include ./auth/cluster.conf).
const ClusterFileName = "cluster.conf"

// RouteUser is the user name routes authenticate with; the password is the
// secret.
const RouteUser = "route"

// DefaultRoutes are the routes of the cluster of docker-compose.yml: every
// node's cluster port. A node drops the route to itself.
var DefaultRoutes = []string{"nats://n1:6222", "nats://n2:6222", "nats://n3:6222"}

// routePasswordBytes is the password's randomness: 256 bits.
const routePasswordBytes = 32

// ClusterFile is where the route credential lives in the key directory dir.
func ClusterFile(dir string) string { return filepath.Join(dir, ClusterFileName) }

// EnsureCluster makes sure dir holds cluster.conf (mode 0600): a route
// user and a random password, required of every route that connects
// (cluster { authorization }), and routes, the cluster's route URLs, with
// that user and password in them, which nats-server gives when it dials a
// route (it takes them from the URL only). An existing file is kept as it
// is, whatever routes says: every node must hold the same password.
func EnsureCluster(dir string, routes []string) (created bool, err error) {
	if err := keyDir(dir); err != nil {
		return false, err
	}
	path := ClusterFile(dir)
	if _, err := os.Stat(path); err == nil {
		return false, checkCluster(path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("route credential: %w", err)
	}
	b := make([]byte, routePasswordBytes)
	if _, err := rand.Read(b); err != nil {
		return false, fmt.Errorf("make the route password: %w", err)
	}
	body, err := ClusterConf(hex.EncodeToString(b), routes)
	if err != nil {
		return false, err
	}
	err = writeSecret(path, []byte(body))
	if errors.Is(err, fs.ErrExist) {
		// Another init made it first: keep theirs.
		return false, checkCluster(path)
	}
	if err != nil {
		return false, fmt.Errorf("write the route credential: %w", err)
	}
	return true, nil
}

// ClusterConf returns the cluster.conf that requires RouteUser and password
// of every route and dials routes (nats://host:port URLs without a user)
// with them.
func ClusterConf(password string, routes []string) (string, error) {
	if password == "" || strings.ContainsAny(password, "\"\\ \t\r\n") {
		return "", errors.New("the route password must be non-empty and hold no quote, backslash or white space")
	}
	if len(routes) == 0 {
		return "", errors.New("no routes: give the cluster's route URLs, e.g. nats://n1:6222,nats://n2:6222,nats://n3:6222")
	}
	var b strings.Builder
	b.WriteString(`# The route credential of a turnlog NATS cluster (SECRET), made by
# turnlog auth init: each node includes it in its cluster block. A server
# that connects to the cluster port must give this user and password, or
# it is refused; the routes below carry them, as nats-server dials a route
# with the credential of its URL. Every node needs the same file. To change
# the routes or the password, delete this file, run turnlog auth init
# again and restart every node.
authorization {
`)
	fmt.Fprintf(&b, "  user: %q\n  password: %q\n}\nroutes: [\n", RouteUser, password)
	for _, r := range routes {
		u, err := url.Parse(strings.TrimSpace(r))
		if err != nil || u.Scheme != "nats" || u.Hostname() == "" || u.Port() == "" || u.Path != "" || u.User != nil {
			return "", fmt.Errorf("route %q: give nats://HOST:PORT, the cluster port of a node, without a user", r)
		}
		u.User = url.UserPassword(RouteUser, password)
		fmt.Fprintf(&b, "  %q\n", u.String())
	}
	b.WriteString("]\n")
	return b.String(), nil
}

// checkCluster refuses a cluster.conf that others may read or that holds
// no route password.
func checkCluster(path string) error {
	if err := private(path, 0o600, "the cluster's route password", "make a new one if it was exposed (delete it, run turnlog auth init again and restart every node)"); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the route credential: %w", err)
	}
	m, err := conf.Parse(string(data))
	if err != nil {
		return fmt.Errorf("%s: %w; delete it and run turnlog auth init again", path, err)
	}
	auth, _ := m["authorization"].(map[string]any)
	if pass, _ := auth["password"].(string); pass == "" {
		return fmt.Errorf("%s holds no route password (authorization { password }); delete it and run turnlog auth init again", path)
	}
	return nil
}
