//go:build !linux

package template

import (
	"os"
	"path/filepath"
)

// onKernelFS: outside Linux, kernel files are refused by path only (see
// kernelDirs).
func onKernelFS(*os.File) bool { return false }

// onKernelFSPath: see onKernelFS.
func onKernelFSPath(string) bool { return false }

// openedPath: outside Linux, the file's path is its name with the links
// resolved.
func openedPath(_ *os.File, name string) (string, bool) {
	real, err := filepath.EvalSymlinks(name)
	return real, err == nil
}
