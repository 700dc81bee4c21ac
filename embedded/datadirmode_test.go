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
// how to fix it; one that only its owner and group may write still runs.
func TestADataDirectoryOthersMayWriteIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    os.FileMode
		refused bool
	}{
		{name: "world-writable", mode: 0o777, refused: true},
		{name: "world-writable with the sticky bit", mode: 0o777 | os.ModeSticky, refused: true},
		{name: "group-writable", mode: 0o770},
		{name: "private", mode: 0o700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, tc.mode))
			srv, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
			if !tc.refused {
				require.NoError(t, err)
				srv.Shutdown()
				return
			}
			if err == nil {
				srv.Shutdown()
			}
			require.Error(t, err, "a server ran on a data directory of mode %v", tc.mode)
			assert.Contains(t, err.Error(), "chmod o-w")
		})
	}
}
