package natsauth_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/natsauth"
)

func TestEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "auth")
	created, err := natsauth.Ensure(dir)
	require.NoError(t, err)
	assert.Equal(t, natsauth.Roles, created)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	pubs := map[natsauth.Role]string{}
	for _, r := range natsauth.Roles {
		info, err := os.Stat(natsauth.KeyFile(dir, r))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s", r)
		pubs[r], err = natsauth.PublicKey(natsauth.KeyFile(dir, r))
		require.NoError(t, err)
		assert.True(t, nkeys.IsValidPublicUserKey(pubs[r]))
	}
	assert.NotEqual(t, pubs[natsauth.Admin], pubs[natsauth.Client], "one key per role")

	// A second start keeps the keys; a deleted one is made anew.
	require.NoError(t, os.Remove(natsauth.KeyFile(dir, natsauth.Client)))
	created, err = natsauth.Ensure(dir)
	require.NoError(t, err)
	assert.Equal(t, []natsauth.Role{natsauth.Client}, created)
	again, err := natsauth.PublicKey(natsauth.KeyFile(dir, natsauth.Admin))
	require.NoError(t, err)
	assert.Equal(t, pubs[natsauth.Admin], again)
	fresh, err := natsauth.PublicKey(natsauth.KeyFile(dir, natsauth.Client))
	require.NoError(t, err)
	assert.NotEqual(t, pubs[natsauth.Client], fresh)
}

func TestEnsureRefusesKeysOthersMayRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	_, err := natsauth.Ensure(dir)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(natsauth.KeyFile(dir, natsauth.Worker), 0o644))
	_, err = natsauth.Ensure(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chmod 600")

	require.NoError(t, os.Chmod(natsauth.KeyFile(dir, natsauth.Worker), 0o600))
	require.NoError(t, os.Chmod(dir, 0o755))
	_, err = natsauth.Ensure(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chmod 700")

	// A directory made by someone else with the usual mode is refused too.
	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o755))
	require.NoError(t, os.Chmod(open, 0o755))
	_, err = natsauth.Ensure(open)
	assert.ErrorContains(t, err, "chmod 700")
}

func TestPublicKeyRefusesWhatIsNoUserSeed(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.nk")
	require.NoError(t, os.WriteFile(garbage, []byte("not a key\n"), 0o600))
	_, err := natsauth.PublicKey(garbage)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not an nkey seed file")

	acct, err := nkeys.CreateAccount()
	require.NoError(t, err)
	seed, err := acct.Seed()
	require.NoError(t, err)
	account := filepath.Join(dir, "account.nk")
	require.NoError(t, os.WriteFile(account, seed, 0o600))
	_, err = natsauth.PublicKey(account)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "account key")

	// A broken key in the key directory stops the server from starting.
	dir = filepath.Join(dir, "auth")
	_, err = natsauth.Ensure(dir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(natsauth.KeyFile(dir, natsauth.Admin), []byte("SUbroken\n"), 0o600))
	_, err = natsauth.Ensure(dir)
	assert.Error(t, err)
}
