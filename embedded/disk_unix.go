//go:build unix

package embedded

import (
	"os"
	"syscall"
)

// diskFree is the space free for an unprivileged writer on the file system
// holding dir (made if missing), and whether it could be read.
func diskFree(dir string) (int64, bool) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, false
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0, false
	}
	return int64(fs.Bavail) * int64(fs.Bsize), true //nolint:unconvert // field types differ by platform
}
