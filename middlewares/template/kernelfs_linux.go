package template

import (
	"os"
	"strconv"
	"syscall"
)

// kernelFSTypes are the f_type values (linux/magic.h) of the file systems
// that expose the running system rather than hold documents. Checking the
// file system catches them wherever they are mounted, not only at /proc,
// /sys and /dev.
var kernelFSTypes = map[int64]bool{
	0x9fa0:     true, // proc
	0x62656572: true, // sysfs
	0x64626720: true, // debugfs
	0x74726163: true, // tracefs
	0x73636673: true, // securityfs
	0x27e0eb:   true, // cgroup
	0x63677270: true, // cgroup2
	0xcafe4a11: true, // bpf
	0x62656570: true, // configfs
	0xde5e81e4: true, // efivarfs
	0x1cd1:     true, // devpts
	0x6165676c: true, // pstore
}

// onKernelFS reports whether the open file f lies on a kernel file system,
// or, by the path the kernel gives for it, in one of kernelDirs (a file in
// /dev/shm is on tmpfs, and a working directory of "/" with a symbolic
// link into /dev stays inside the root); when that cannot be told, it says
// yes.
func onKernelFS(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	var (
		st   syscall.Statfs_t
		serr error
		path string
	)
	if err := rc.Control(func(fd uintptr) {
		if serr = syscall.Fstatfs(int(fd), &st); serr == nil {
			path, serr = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
		}
	}); err != nil || serr != nil {
		return true
	}
	return kernelFSTypes[int64(st.Type)] || inKernelDir(path)
}

// onKernelFSPath is onKernelFS for a path.
func onKernelFSPath(path string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return true
	}
	return kernelFSTypes[int64(st.Type)]
}

// openedPath is the path the kernel gives for the open file f, which
// names the file itself whatever links led to it; false when it cannot be
// told.
func openedPath(f *os.File, _ string) (string, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", false
	}
	var (
		path string
		rerr error
	)
	if err := rc.Control(func(fd uintptr) {
		path, rerr = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
	}); err != nil || rerr != nil {
		return "", false
	}
	return path, true
}
