package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/natsauth"
	"go.yaml.in/yaml/v3"
)

// nodes are the cluster's servers: compose service name = server_name =
// the host name the other nodes' routes dial.
var nodes = []string{"n1", "n2", "n3"}

// clusterPort is where every node listens for routes inside its container.
const clusterPort = 6222

// roleKeys sets the TURNLOG_NKEY_* variables auth.conf reads to fresh
// public keys, as docker compose does from deploy/auth/nkeys.env, and
// returns them.
func roleKeys(t *testing.T) map[natsauth.Role]string {
	t.Helper()
	keys := map[natsauth.Role]string{}
	for r, kp := range roleSeeds(t) {
		pub, err := kp.PublicKey()
		require.NoError(t, err)
		keys[r] = pub
	}
	return keys
}

// configDir copies the node configurations and auth.conf into a new
// directory, as compose mounts them beside each other, and with cluster
// gives it auth/cluster.conf as `turnlog auth init` makes it, for the
// routes of docker-compose.yml. It returns the directory.
func configDir(t *testing.T, cluster bool) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"auth.conf", "nats-n1.conf", "nats-n2.conf", "nats-n3.conf"} {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	if cluster {
		created, err := natsauth.EnsureCluster(filepath.Join(dir, "auth"), natsauth.DefaultRoutes)
		require.NoError(t, err)
		require.True(t, created)
	}
	return dir
}

// TestAuthConfIsGenerated: deploy/auth.conf is exactly what `turnlog auth
// conf` prints, so the cluster's permissions are the embedded server's.
func TestAuthConfIsGenerated(t *testing.T) {
	data, err := os.ReadFile("auth.conf")
	require.NoError(t, err)
	want := natsauth.Conf(eventlog.NamesFor(eventlog.DefaultPrefix), func(r natsauth.Role) string { return "$" + natsauth.EnvVar(r) })
	assert.Equal(t, want, string(data), "deploy/auth.conf is stale: regenerate it with `go run ./cmd/turnlog auth conf > deploy/auth.conf`")
}

// TestNATSConfigsWithoutKeys: a server whose public keys are missing does
// not start open; it does not start at all.
func TestNATSConfigsWithoutKeys(t *testing.T) {
	for _, r := range natsauth.Roles {
		t.Setenv(natsauth.EnvVar(r), "")
		os.Unsetenv(natsauth.EnvVar(r))
	}
	_, err := server.ProcessConfigFile(filepath.Join(configDir(t, true), "nats-n1.conf"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TURNLOG_NKEY_ADMIN")
}

// TestNATSConfigsWithoutRouteCredential: a node without the route
// credential does not start with routes open to anyone; it does not start.
func TestNATSConfigsWithoutRouteCredential(t *testing.T) {
	roleKeys(t)
	dir := configDir(t, false)
	for _, n := range nodes {
		_, err := server.ProcessConfigFile(filepath.Join(dir, "nats-"+n+".conf"))
		require.Error(t, err, "nats-%s.conf must not load without auth/cluster.conf", n)
		assert.Contains(t, err.Error(), "cluster.conf", "the error must name the missing file")
	}
}

func TestNATSConfigs(t *testing.T) {
	keys := roleKeys(t)
	dir := configDir(t, true)
	opts := map[string]*server.Options{}
	for _, n := range nodes {
		o, err := server.ProcessConfigFile(filepath.Join(dir, "nats-"+n+".conf"))
		require.NoError(t, err, "nats-%s.conf must parse as nats-server parses it", n)
		opts[n] = o
	}
	seen := map[string]string{}
	for _, n := range nodes {
		t.Run(n, func(t *testing.T) {
			o := opts[n]
			assert.Equal(t, n, o.ServerName, "server_name must be the compose service name")
			if other, dup := seen[o.ServerName]; dup {
				t.Errorf("server_name %q is used by %s too; JetStream needs distinct names", o.ServerName, other)
			}
			seen[o.ServerName] = n

			assert.True(t, o.JetStream, "jetstream must be enabled")
			assert.Equal(t, "/data/jetstream", o.StoreDir, "store_dir must be on the node's volume (mounted at /data)")
			assert.Equal(t, 4222, o.Port, "clients port inside the container")
			assert.Equal(t, 8222, o.HTTPPort, "monitoring port of the compose health check")
			// The monitoring port has no authentication: its /connz?subs=detail
			// names every subscription (a live view's turnlog.delta.<conversation>),
			// the users' keys and addresses. Only the health check, run inside
			// the container, needs it.
			assert.Equal(t, "127.0.0.1", o.HTTPHost, "the monitoring port answers anyone who reaches it: only the container itself may")
			assert.Empty(t, o.JetStreamDomain, "one cluster, no JetStream domain")
			assert.GreaterOrEqual(t, o.MaxPayload, int32(8<<20), "steps up to 8 MiB, as the embedded server")

			// Authentication: one nkey user per role, each in its
			// account with the role's permissions, and nobody else.
			require.Len(t, o.Nkeys, len(natsauth.Roles), "one user per role")
			assert.Empty(t, o.Users, "no user/password users besides the roles")
			assert.Empty(t, o.Authorization, "no token")
			assert.Empty(t, o.NoAuthUser, "no user for connections without credentials")
			names := eventlog.NamesFor(eventlog.DefaultPrefix)
			byKey := map[string]*server.NkeyUser{}
			for _, u := range o.Nkeys {
				byKey[u.Nkey] = u
			}
			for _, r := range natsauth.Roles {
				u := byKey[keys[r]]
				require.NotNil(t, u, "the %s role's user, its key from %s", r, natsauth.EnvVar(r))
				require.NotNil(t, u.Account, "%s is in an account", r)
				assert.Equal(t, natsauth.AccountOf(r), u.Account.Name, "%s's account", r)
				assert.Equal(t, natsauth.Permissions(r, names), u.Permissions, "%s's permissions must be those of the embedded server", r)
			}
			var accounts []string
			for _, a := range o.Accounts {
				accounts = append(accounts, a.Name)
			}
			slices.Sort(accounts)
			assert.Equal(t, []string{natsauth.Account, natsauth.ClientsAccount}, accounts, "turnlog's account and the clients'")

			assert.Equal(t, "turnlog", o.Cluster.Name, "every node must name the same cluster")
			assert.Equal(t, clusterPort, o.Cluster.Port)
			var routes []string
			for _, u := range o.Routes {
				routes = append(routes, u.Host)
			}
			var want []string
			for _, node := range nodes {
				want = append(want, fmt.Sprintf("%s:%d", node, clusterPort))
			}
			slices.Sort(routes)
			assert.Equal(t, want, routes, "routes must reach the other nodes (the one to itself is dropped)")

			// Route authentication: a server joining on the cluster port
			// must give the route user and password, and every route
			// this node dials gives them (nats-server takes them from the
			// URL only), the same on every node.
			assert.Equal(t, natsauth.RouteUser, o.Cluster.Username, "routes must authenticate")
			assert.Len(t, o.Cluster.Password, 64, "a random route password of 256 bits")
			assert.Equal(t, opts[nodes[0]].Cluster.Password, o.Cluster.Password, "every node requires the same route password")
			for _, u := range o.Routes {
				require.NotNil(t, u.User, "route %s carries no credential", u.Host)
				pass, _ := u.User.Password()
				assert.Equal(t, o.Cluster.Username, u.User.Username(), "route %s", u.Host)
				assert.Equal(t, o.Cluster.Password, pass, "route %s must give the password the nodes require", u.Host)
			}
		})
	}
}

// compose is the part of docker-compose.yml the checks read.
type compose struct {
	Services map[string]struct {
		Image   string   `yaml:"image"`
		Build   any      `yaml:"build"`
		Command []string `yaml:"command"`
		Volumes []any    `yaml:"volumes"`
		Ports   []string `yaml:"ports"`
		EnvFile string   `yaml:"env_file"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func TestCompose(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	require.NoError(t, err)
	var c compose
	require.NoError(t, yaml.Unmarshal(data, &c), "docker-compose.yml must be valid YAML")

	var natsServices, workers []string
	for name, s := range c.Services {
		switch {
		case strings.HasPrefix(s.Image, "nats:"):
			natsServices = append(natsServices, name)
		case slices.Contains(s.Command, "worker"):
			workers = append(workers, name)
		}
	}
	slices.Sort(natsServices)
	assert.Equal(t, nodes, natsServices, "3 NATS services named as the configs' server_name")
	assert.Len(t, workers, 2, "2 turnlog workers")

	hostPorts := map[string]string{}
	for _, n := range nodes {
		s := c.Services[n]
		conf := "./deploy/nats-" + n + ".conf"
		var mountsConf, mountsData, mountsAuth, mountsCluster bool
		for _, v := range s.Volumes {
			if m, ok := v.(map[string]any); ok {
				// Long syntax: the route credential.
				if m["source"] == "./deploy/auth/cluster.conf" {
					mountsCluster = true
					assert.Equal(t, "/etc/nats/auth/cluster.conf", m["target"], "%s: the configuration includes ./auth/cluster.conf", n)
					assert.Equal(t, true, m["read_only"], "%s: cluster.conf read-only", n)
					assert.Equal(t, map[string]any{"create_host_path": false}, m["bind"],
						"%s: a missing cluster.conf must stop compose, not become an empty directory", n)
				}
				continue
			}
			src, dst, _ := strings.Cut(v.(string), ":")
			switch {
			case src == "./deploy/auth.conf":
				mountsAuth = true
				assert.Equal(t, "/etc/nats/auth.conf:ro", dst, "%s: auth.conf beside the server's configuration, which includes ./auth.conf", n)
			case src == conf:
				mountsConf = true
				assert.True(t, slices.Contains(s.Command, strings.TrimSuffix(dst, ":ro")), "%s: the command must load the mounted %s", n, conf)
				_, err := os.Stat(filepath.Join("..", conf))
				assert.NoError(t, err, "%s mounts a config file that does not exist", n)
			case strings.HasPrefix(dst, "/data"):
				mountsData = true
				assert.Contains(t, c.Volumes, src, "%s: the store must be a named volume, declared under volumes:", n)
			}
		}
		assert.True(t, mountsConf, "%s must mount %s", n, conf)
		assert.True(t, mountsAuth, "%s must mount deploy/auth.conf", n)
		assert.True(t, mountsCluster, "%s must mount deploy/auth/cluster.conf, the route credential", n)
		assert.Equal(t, "./deploy/auth/nkeys.env", s.EnvFile, "%s reads the roles' public keys from nkeys.env", n)
		assert.True(t, mountsData, "%s must keep its store on its own volume at /data", n)
		require.Len(t, s.Ports, 1, "%s publishes its client port", n)
		// [IP:]HOST_PORT:CONTAINER_PORT
		parts := strings.Split(s.Ports[0], ":")
		require.GreaterOrEqual(t, len(parts), 2, "%s: port mapping %q", n, s.Ports[0])
		host, container := parts[len(parts)-2], parts[len(parts)-1]
		assert.Equal(t, "4222", container, "%s: host port maps to the client port", n)
		if len(parts) == 3 {
			assert.Equal(t, "127.0.0.1", parts[0], "%s: loopback only", n)
		}
		if other, dup := hostPorts[host]; dup {
			t.Errorf("%s and %s both publish host port %s", n, other, host)
		}
		hostPorts[host] = n
	}
	assert.Equal(t, map[string]string{"4222": "n1", "4223": "n2", "4224": "n3"}, hostPorts, "client ports on the host")
	assert.Len(t, c.Volumes, len(nodes), "one named volume per node")

	for _, w := range workers {
		s := c.Services[w]
		assert.NotNil(t, s.Build, "%s is built from the Dockerfile", w)
		args := strings.Join(s.Command, " ")
		assert.Contains(t, args, "--nats-url nats://n1:4222,nats://n2:4222,nats://n3:4222", "%s must know every node, to fail over", w)
		assert.Contains(t, args, "--replicas 3", "%s must create R3 streams", w)
		assert.Equal(t, "./deploy/auth/worker.env", s.EnvFile, "%s signs with the worker key (TURNLOG_NATS_SEED) and takes its metrics token (TURNLOG_METRICS_TOKEN) from worker.env", w)
		for _, arg := range s.Command {
			// A token on the command line would be in the repository
			// and in every process list.
			assert.NotContains(t, arg, "TOKEN", "%s: the metrics token comes from worker.env, never the command", w)
			assert.NotEqual(t, "--metrics-token-file", arg, "%s: a mounted 0600 file is not readable by the image's user; the token comes from worker.env", w)
		}
	}
}
