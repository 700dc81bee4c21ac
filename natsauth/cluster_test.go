package natsauth_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/natsauth"
)

// clusterOpts loads cluster.conf as a node's cluster block includes it.
func clusterOpts(t *testing.T, dir string) *server.Options {
	t.Helper()
	conf := filepath.Join(dir, "node.conf")
	require.NoError(t, os.WriteFile(conf, []byte("cluster {\n  name: c\n  listen: 127.0.0.1:6222\n  include ./cluster.conf\n}\n"), 0o600))
	o, err := server.ProcessConfigFile(conf)
	require.NoError(t, err)
	return o
}

func TestEnsureCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	created, err := natsauth.EnsureCluster(dir, natsauth.DefaultRoutes)
	require.NoError(t, err)
	assert.True(t, created)
	info, err := os.Stat(natsauth.ClusterFile(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "cluster.conf holds the route password")

	o := clusterOpts(t, dir)
	assert.Equal(t, natsauth.RouteUser, o.Cluster.Username)
	assert.Len(t, o.Cluster.Password, 64)
	require.Len(t, o.Routes, len(natsauth.DefaultRoutes))
	for i, u := range o.Routes {
		pass, _ := u.User.Password()
		assert.Equal(t, natsauth.RouteUser, u.User.Username())
		assert.Equal(t, o.Cluster.Password, pass, "route %d must give the password", i)
		assert.Equal(t, natsauth.DefaultRoutes[i], "nats://"+u.Host)
	}

	// Kept: every node must hold the same password.
	created, err = natsauth.EnsureCluster(dir, []string{"nats://other:6222"})
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, o.Cluster.Password, clusterOpts(t, dir).Cluster.Password, "a second init keeps the password")

	// Another directory, another password.
	other := filepath.Join(t.TempDir(), "auth")
	_, err = natsauth.EnsureCluster(other, natsauth.DefaultRoutes)
	require.NoError(t, err)
	assert.NotEqual(t, o.Cluster.Password, clusterOpts(t, other).Cluster.Password)
}

func TestEnsureClusterRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	_, err := natsauth.EnsureCluster(dir, natsauth.DefaultRoutes)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(natsauth.ClusterFile(dir), 0o644))
	_, err = natsauth.EnsureCluster(dir, natsauth.DefaultRoutes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chmod 600")

	require.NoError(t, os.Chmod(natsauth.ClusterFile(dir), 0o600))
	require.NoError(t, os.WriteFile(natsauth.ClusterFile(dir), []byte("routes: []\n"), 0o600))
	_, err = natsauth.EnsureCluster(dir, natsauth.DefaultRoutes)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no route password")

	for _, tc := range []struct{ name, route string }{
		{name: "a user of its own", route: "nats://u:p@n1:6222"},
		{name: "no port", route: "nats://n1"},
		{name: "another scheme", route: "tls://n1:6222"},
		{name: "not a URL", route: "n1:6222"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "auth")
			_, err := natsauth.EnsureCluster(dir, []string{tc.route})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "nats://HOST:PORT")
			_, err = os.Stat(natsauth.ClusterFile(dir))
			assert.ErrorIs(t, err, os.ErrNotExist, "no file made of a bad route")
		})
	}
}
