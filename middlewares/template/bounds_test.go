//go:build linux

package template

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFileNeverReadsKernelFiles is issue 15's reproduction: a template
// [file:cmdline] with the request's cwd set to /proc/self returned the
// server's command line (and so its --token), [file:environ] its whole
// environment. Files under /proc, /sys and /dev are never read, whatever
// the path to them: the cwd itself, a symbolic link to it, or a name
// reaching there from "/".
func TestFileNeverReadsKernelFiles(t *testing.T) {
	linkToProc := filepath.Join(t.TempDir(), "proc-link")
	require.NoError(t, os.Symlink("/proc/self", linkToProc))
	tests := []struct {
		name string
		cwd  string
		file string
	}{
		{name: "command line", cwd: "/proc/self", file: "cmdline"},
		{name: "environment", cwd: "/proc/self", file: "environ"},
		{name: "environment of pid 1", cwd: "/proc/1", file: "environ"},
		{name: "cwd is a link to /proc/self", cwd: linkToProc, file: "environ"},
		{name: "from the root", cwd: "/", file: "proc/self/environ"},
		{name: "absolute name from the root", cwd: "/", file: "/proc/self/environ"},
		{name: "dot-dot into /proc", cwd: "/tmp", file: "../proc/self/environ"},
		{name: "cwd written with dot-dot", cwd: "/tmp/../proc/self", file: "environ"},
		// /proc/self/cwd is a magic link to the server's own directory: it
		// is refused because of where it is written, not where it leads.
		{name: "the process's cwd through /proc", cwd: "/proc/self/cwd", file: "bounds_test.go"},
		{name: "sysfs", cwd: "/sys/kernel", file: "uevent_seqnum"},
		{name: "a device", cwd: "/dev", file: "null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prompt, used, _, err := RenderWith(context.Background(), "<[file:"+tc.file+"]>", Env{Cwd: tc.cwd})
			require.NoError(t, err)
			assert.Equal(t, "<>", prompt, "the file must not be read")
			assert.Empty(t, used)
		})
	}
}

// TestFileThroughALinkFromTheRoot: with "/" as the working directory, a
// relative symbolic link into /proc or /dev stays inside the root, so
// os.Root follows it; the opened file is refused all the same, by its file
// system and by the path the kernel gives for it.
func TestFileThroughALinkFromTheRoot(t *testing.T) {
	dir := t.TempDir()
	up := strings.Repeat("../", strings.Count(dir, "/"))
	require.NoError(t, os.Symlink(up+"proc/self/environ", filepath.Join(dir, "environ")))
	require.NoError(t, os.Symlink(up+"dev/shm", filepath.Join(dir, "shm")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("plain"), 0o600))
	shm, err := os.MkdirTemp("/dev/shm", "turnlog-test-")
	if err == nil {
		t.Cleanup(func() { os.RemoveAll(shm) })
		require.NoError(t, os.WriteFile(filepath.Join(shm, "a.txt"), []byte("SECRET"), 0o600))
	}
	rel := strings.TrimPrefix(dir, "/")
	tpl := "<[file:" + rel + "/environ]><[file:" + rel + "/plain.txt]>"
	if shm != "" {
		tpl += "<[file:" + rel + "/shm/" + filepath.Base(shm) + "/a.txt]>"
	}
	prompt, _, _, err := RenderWith(context.Background(), tpl, Env{Cwd: "/"})
	require.NoError(t, err)
	want := "<><plain>"
	if shm != "" {
		want += "<>"
	}
	assert.Equal(t, want, prompt, "the plain file is read, the kernel's are not")
}

// TestFileNotADeviceAnywhere: a device node outside /dev is refused by
// its type.
func TestFileNotADeviceAnywhere(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a device node")
	}
	dir := t.TempDir()
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	prompt, _, _, err := RenderWith(context.Background(), "<[file:null]>", Env{Cwd: dir})
	require.NoError(t, err)
	assert.Equal(t, "<>", prompt)
}

// TestFileInDevShmRefused checks a regular file under /dev (tmpfs), which
// the regular-file check alone would accept.
func TestFileInDevShmRefused(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "turnlog-test-")
	if err != nil {
		t.Skipf("/dev/shm is not writable here: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("SECRET"), 0o600))
	prompt, _, _, err := RenderWith(context.Background(), "<[file:a.txt]>", Env{Cwd: dir})
	require.NoError(t, err)
	assert.Equal(t, "<>", prompt)
	assert.NotContains(t, prompt, "SECRET")
}

// TestFileReadsOrdinaryFilesStill is the other side of the two tests above:
// the same templates in an ordinary directory read the files.
func TestFileReadsOrdinaryFilesStill(t *testing.T) {
	cwd := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "environ"), []byte("E"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "cmdline"), []byte("C"), 0o600))
	prompt, _, _, err := RenderWith(context.Background(), "<[file:cmdline][file:environ]>", Env{Cwd: cwd})
	require.NoError(t, err)
	assert.Equal(t, "<CE>", prompt)
	assert.False(t, strings.Contains(prompt, "PATH="))
}
