//go:build !linux

package template

import "os"

// onKernelFS: outside Linux, kernel files are refused by path only (see
// kernelDirs).
func onKernelFS(*os.File) bool { return false }

// onKernelFSPath: see onKernelFS.
func onKernelFSPath(string) bool { return false }
