package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

func TestAuthInit(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "auth")
	out, code := runCmd(t, nil, "", "auth", "init", "--dir", dir, "--worker-env")
	require.Equal(t, 0, code, out)
	pubs := map[natsauth.Role]string{}
	for _, r := range natsauth.Roles {
		info, err := os.Stat(natsauth.KeyFile(dir, r))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s key", r)
		pub, err := natsauth.PublicKey(natsauth.KeyFile(dir, r))
		require.NoError(t, err)
		pubs[r] = pub
		assert.Contains(t, out, pub)
	}
	env, err := os.ReadFile(filepath.Join(dir, "nkeys.env"))
	require.NoError(t, err)
	for _, r := range natsauth.Roles {
		assert.Contains(t, string(env), natsauth.EnvVar(r)+"="+pubs[r]+"\n")
	}
	info, err := os.Stat(filepath.Join(dir, "worker.env"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "worker.env holds a secret")
	workerEnv, err := os.ReadFile(filepath.Join(dir, "worker.env"))
	require.NoError(t, err)
	seedLine := ""
	for _, l := range strings.Split(string(workerEnv), "\n") {
		if strings.HasPrefix(l, "TURNLOG_NATS_SEED=SU") {
			seedLine = l
		}
	}
	require.NotEmpty(t, seedLine, "worker.env: %s", workerEnv)
	// The workers' metrics token, for the containers and the scraper.
	metricsToken, err := natsauth.ReadMetricsToken(natsauth.MetricsTokenFile(dir))
	require.NoError(t, err, "init --worker-env must make metrics.token, mode 0600")
	assert.Len(t, metricsToken, 43, "256 random bits")
	assert.Contains(t, string(workerEnv), "\nTURNLOG_METRICS_TOKEN="+metricsToken+"\n")
	info, err = os.Stat(natsauth.ClusterFile(dir))
	require.NoError(t, err, "init must make the cluster's route credential")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "cluster.conf holds a secret")
	cluster, err := os.ReadFile(natsauth.ClusterFile(dir))
	require.NoError(t, err)
	assert.Contains(t, out, "cluster.conf (created; secret)")

	// Again: the keys are kept.
	out, code = runCmd(t, nil, "", "auth", "init", "--dir", dir)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "kept")
	pub, err := natsauth.PublicKey(natsauth.KeyFile(dir, natsauth.Worker))
	require.NoError(t, err)
	assert.Equal(t, pubs[natsauth.Worker], pub)
	again, err := os.ReadFile(natsauth.ClusterFile(dir))
	require.NoError(t, err)
	assert.Equal(t, string(cluster), string(again), "the route credential is kept: every node must hold the same")
	out, code = runCmd(t, nil, "", "auth", "init", "--dir", dir, "--worker-env")
	require.Equal(t, 0, code, out)
	keptToken, err := natsauth.ReadMetricsToken(natsauth.MetricsTokenFile(dir))
	require.NoError(t, err)
	assert.Equal(t, metricsToken, keptToken, "the metrics token is kept: the scrapers hold it")
	workerEnv, err = os.ReadFile(filepath.Join(dir, "worker.env"))
	require.NoError(t, err)

	// A server started on these keys lets the worker seed from the
	// environment in, as a container would use it.
	srv := natstest.StartIn(t, data, natstest.WithAuth())
	_, err = eventlog.Open(t.Context(), srv.Conn)
	require.NoError(t, err)
	assert.Contains(t, string(workerEnv), "\nTURNLOG_NATS_INBOX_PREFIX=_INBOX_worker\n", "the worker's inbox prefix beside its seed")
	out, code = runCmd(t, []string{seedLine, "TURNLOG_NATS_INBOX_PREFIX=_INBOX_worker"}, "", "template", "get", "--nats-url", srv.ClientURL())
	assert.Equal(t, 0, code, out)
}

func TestAuthConf(t *testing.T) {
	out, code := runCmd(t, nil, "", "auth", "conf")
	require.Equal(t, 0, code, out)
	deployed, err := os.ReadFile(filepath.Join("..", "deploy", "auth.conf"))
	require.NoError(t, err)
	assert.Equal(t, string(deployed), out, "deploy/auth.conf is the output of turnlog auth conf")

	dir := filepath.Join(t.TempDir(), "auth")
	_, err = natsauth.Ensure(dir)
	require.NoError(t, err)
	out, code = runCmd(t, nil, "", "auth", "conf", "--keys", dir, "--prefix", "acme")
	require.Equal(t, 0, code, out)
	pub, err := natsauth.PublicKey(natsauth.KeyFile(dir, natsauth.Client))
	require.NoError(t, err)
	assert.Contains(t, out, "nkey: "+pub)
	assert.NotContains(t, out, "$TURNLOG_NKEY")
	assert.Contains(t, out, `"acme.chat.*"`)
	assert.NotContains(t, out, "turnlog.chat")
}
