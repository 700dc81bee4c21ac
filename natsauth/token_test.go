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
