//go:build linux

package template

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
