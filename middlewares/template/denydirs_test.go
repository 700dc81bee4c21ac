package template

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResolveDenyDirs: a file: variable never reads in Env.DenyDirs,
// whichever path leads there, and reads elsewhere as before.
func TestResolveDenyDirs(t *testing.T) {
	data := t.TempDir()
	auth := filepath.Join(data, "auth")
	require.NoError(t, os.Mkdir(auth, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(auth, "admin.nk"), []byte("SUSECRET"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(data, "NOTES"), []byte("notes"), 0o600))
	require.NoError(t, os.Symlink("auth", filepath.Join(data, "keys")))             // a link inside the working directory
	require.NoError(t, os.Symlink("auth/admin.nk", filepath.Join(data, "key.txt"))) // a link to the file itself
	elsewhere := t.TempDir()
	require.NoError(t, os.Symlink(auth, filepath.Join(elsewhere, "cwd"))) // a working directory that is a link there

	tests := []struct {
		name, cwd, file string
	}{
		{"the directory as working directory", auth, "admin.nk"},
		{"a name with the directory in it", data, "auth/admin.nk"},
		{"an absolute name", data, filepath.Join(auth, "admin.nk")},
		{"a link to the directory", data, "keys/admin.nk"},
		{"a link to the file", data, "key.txt"},
		{"a working directory linked to it", filepath.Join(elsewhere, "cwd"), "admin.nk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := Ref{"file", tc.file}
			env := Env{Cwd: tc.cwd}
			v, ok := mustResolve(t, context.Background(), []Ref{ref}, env).Lookup(ref)
			require.True(t, ok && v == "SUSECRET", "without DenyDirs the case must read the file, else it proves nothing (got %q, %v)", v, ok)
			env.DenyDirs = []string{auth}
			v, ok = mustResolve(t, context.Background(), []Ref{ref}, env).Lookup(ref)
			assert.False(t, ok, "read %q", v)
		})
	}
	ref := Ref{"file", "NOTES"}
	v, ok := mustResolve(t, context.Background(), []Ref{ref}, Env{Cwd: data, DenyDirs: []string{auth}}).Lookup(ref)
	assert.True(t, ok)
	assert.Equal(t, "notes", v, "the rest of the working directory is read")
}
