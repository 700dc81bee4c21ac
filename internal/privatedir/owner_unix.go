//go:build unix

package privatedir

import (
	"os"
	"syscall"
)

// owner is the user ID that owns the file info describes.
func owner(info os.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// group is the group ID of the file info describes.
func group(info os.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Gid), true
}
