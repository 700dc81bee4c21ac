package embedded_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
)

// TestADataDirectoryOthersMayWriteIsRefused: a server started on a data
// directory that other users may write (a pre-made one, mode 0777) ran,
// and any local user could then rename its store or its auth/ away and
// put their own in its place: erase every conversation, or replace the
// keys, without a credential. Such a directory is now refused, saying
// how to fix it; one that only its owner and the owner's private group may write still runs.
// So is one that belongs to another user (who may change its mode at
// will), as the gateway's spool directory is: it ran.
func TestADataDirectoryOthersMayWriteIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    os.FileMode
		owner   int // -1: this process's user
		refused string
	}{
		{name: "world-writable", mode: 0o777, owner: -1, refused: "chmod o-w"},
		{name: "world-writable with the sticky bit", mode: 0o777 | os.ModeSticky, owner: -1, refused: "chmod o-w"},
		{name: "another user's", mode: 0o700, owner: 4242, refused: "belongs to another user (uid 4242)"},
		{name: "group-writable", mode: 0o770, owner: -1},
		{name: "private", mode: 0o700, owner: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.owner >= 0 && os.Getuid() != 0 {
				t.Skip("only root can give a directory to another user")
			}
			dir := filepath.Join(t.TempDir(), "data")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, tc.mode))
			if tc.owner >= 0 {
				require.NoError(t, os.Chown(dir, tc.owner, tc.owner))
			}
			srv, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
			if tc.refused == "" {
				require.NoError(t, err)
				srv.Shutdown()
				return
			}
			if err == nil {
				srv.Shutdown()
			}
			require.Error(t, err, "a server ran on a data directory of mode %v", tc.mode)
			assert.Contains(t, err.Error(), tc.refused)
			assert.Contains(t, err.Error(), dir, "the error names the directory")
		})
	}
}

// TestADataDirectoryTheServerMakesRuns: the data directory the server
// makes (serve's default ./.turnlog, absent at first start) is its user's
// and 0700, and passes the check of who controls it.
func TestADataDirectoryTheServerMakesRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made", ".turnlog")
	srv, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	srv.Shutdown()
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
}
