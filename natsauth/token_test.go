package natsauth_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/natsauth"
)

// TestEnsureToken: the first start makes a random token in a file only its
// owner may read, later starts reuse it, and a token the operator wrote
// there is used as written.
func TestEnsureToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "auth")
	token, created, err := natsauth.EnsureToken(dir)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Len(t, token, 43, "256 bits, base64url")
	for path, want := range map[string]os.FileMode{dir: 0o700, natsauth.TokenFile(dir): 0o600} {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, info.Mode().Perm(), path)
	}
	data, err := os.ReadFile(natsauth.TokenFile(dir))
	require.NoError(t, err)
	assert.Equal(t, token+"\n", string(data), "the token alone, for $(cat http.token)")

	again, created, err := natsauth.EnsureToken(dir)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, token, again, "a restart keeps the token")

	other, _, err := natsauth.EnsureToken(filepath.Join(t.TempDir(), "auth"))
	require.NoError(t, err)
	assert.NotEqual(t, token, other, "each data directory has its own")

	require.NoError(t, os.WriteFile(natsauth.TokenFile(dir), []byte("# chosen by the operator\nmy-own-token\n"), 0o600))
	mine, _, err := natsauth.EnsureToken(dir)
	require.NoError(t, err)
	assert.Equal(t, "my-own-token", mine)
}

func TestEnsureTokenRefuses(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		want    string
	}{
		{"a token file others may read", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(natsauth.TokenFile(dir), 0o644))
		}, "chmod 600"},
		{"a directory others may read", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(dir, 0o755))
		}, "chmod 700"},
		{"an empty token file", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(natsauth.TokenFile(dir), nil, 0o600))
		}, "holds no token"},
		{"a token with white space", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(natsauth.TokenFile(dir), []byte("two words\n"), 0o600))
		}, "white space"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "auth")
			_, _, err := natsauth.EnsureToken(dir)
			require.NoError(t, err)
			tc.prepare(t, dir)
			token, _, err := natsauth.EnsureToken(dir)
			require.Error(t, err)
			assert.Empty(t, token)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestMetricsToken: the workers' metrics token lives apart from the HTTP
// API's, made and guarded the same way, and a worker's token file that
// other users may read is refused, saying what to do without promising
// that a start makes a new one (a worker makes none).
func TestMetricsToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	token, created, err := natsauth.EnsureMetricsToken(dir)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Len(t, token, 43, "256 bits, base64url")
	info, err := os.Stat(natsauth.MetricsTokenFile(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	got, err := natsauth.ReadMetricsToken(natsauth.MetricsTokenFile(dir))
	require.NoError(t, err)
	assert.Equal(t, token, got)
	httpToken, _, err := natsauth.EnsureToken(dir)
	require.NoError(t, err)
	assert.NotEqual(t, token, httpToken, "the metrics token is not the HTTP API's")

	require.NoError(t, os.Chmod(natsauth.MetricsTokenFile(dir), 0o640))
	_, err = natsauth.ReadMetricsToken(natsauth.MetricsTokenFile(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds the metrics token but other users may read it")
	assert.Contains(t, err.Error(), "chmod 600")
	assert.NotContains(t, err.Error(), "next start")
}
